// Shared helpers of the deploy/ checks: repository paths, YAML loading, the
// metrics contract (docs/metrics.md), the Grafana data sources and the
// PostgreSQL schema (coordinator/store/migrations.cc).
'use strict';

const fs = require('fs');
const path = require('path');
const YAML = require('yaml');

const ROOT = path.resolve(__dirname, '..', '..');

function rel(p) {
  return path.relative(ROOT, p) || '.';
}

function read(p) {
  return fs.readFileSync(path.resolve(ROOT, p), 'utf8');
}

// All YAML documents of a file (empty documents dropped).
function loadYamlDocs(p) {
  const docs = YAML.parseAllDocuments(read(p), { prettyErrors: true });
  const out = [];
  for (const d of docs) {
    if (d.errors && d.errors.length) {
      throw new Error(`${rel(path.resolve(ROOT, p))}: ${d.errors[0].message}`);
    }
    const v = d.toJS({ maxAliasCount: 100 });
    if (v !== null && v !== undefined) out.push(v);
  }
  return out;
}

function loadYaml(p) {
  const docs = loadYamlDocs(p);
  if (docs.length !== 1) throw new Error(`${p}: expected one YAML document, found ${docs.length}`);
  return docs[0];
}

// docs/metrics.md: rows `| \`name\` | type | \`l1\`, \`l2\` | unit | meaning |`.
// Returns Map name -> {type, labels: Set}.
function loadContract(p = 'docs/metrics.md') {
  const contract = new Map();
  const row = /^\|\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`\s*\|\s*(counter|gauge|histogram|summary)\s*\|([^|]*)\|/;
  for (const line of read(p).split('\n')) {
    const m = row.exec(line);
    if (!m) continue;
    const labels = new Set([...m[3].matchAll(/`([a-zA-Z_][a-zA-Z0-9_]*)`/g)].map((x) => x[1]));
    if (contract.has(m[1])) throw new Error(`${p}: metric ${m[1]} is listed twice`);
    contract.set(m[1], { type: m[2], labels });
  }
  if (contract.size === 0) throw new Error(`${p}: no metric rows found`);
  return contract;
}

// The series names a scrape can return for the contract's metrics, with
// their labels (histograms: _bucket/_sum/_count; summaries: quantiles too).
function seriesTable(contract) {
  const series = new Map();
  for (const [name, { type, labels }] of contract) {
    if (type === 'histogram') {
      series.set(`${name}_bucket`, { metric: name, labels: new Set([...labels, 'le']) });
      series.set(`${name}_sum`, { metric: name, labels });
      series.set(`${name}_count`, { metric: name, labels });
    } else if (type === 'summary') {
      series.set(name, { metric: name, labels: new Set([...labels, 'quantile']) });
      series.set(`${name}_sum`, { metric: name, labels: new Set([...labels].filter((l) => l !== 'quantile')) });
      series.set(`${name}_count`, { metric: name, labels: new Set([...labels].filter((l) => l !== 'quantile')) });
    } else {
      series.set(name, { metric: name, labels });
    }
  }
  return series;
}

// Provisioned Grafana data sources: Map uid -> type.
function loadDatasources(dir = 'deploy/grafana/provisioning/datasources') {
  const out = new Map();
  for (const f of fs.readdirSync(path.join(ROOT, dir)).sort()) {
    if (!/\.ya?ml$/.test(f)) continue;
    const doc = loadYaml(path.join(dir, f));
    for (const ds of doc.datasources || []) {
      if (!ds.uid) throw new Error(`${dir}/${f}: data source ${ds.name} has no uid`);
      out.set(ds.uid, ds.type);
    }
  }
  return out;
}

// The SQL of every migration in coordinator/store/migrations.cc, in order.
function migrationSql(p = 'coordinator/store/migrations.cc') {
  return [...read(p).matchAll(/R"sql\(([\s\S]*?)\)sql"/g)].map((m) => m[1]);
}

// Tables and their columns, from the CREATE TABLE statements.
function loadSchema(p = 'coordinator/store/migrations.cc') {
  const tables = new Map();
  for (const sql of migrationSql(p)) {
    const clean = sql.replace(/--[^\n]*/g, '');
    for (const m of clean.matchAll(/CREATE TABLE\s+([a-z_]+)\s*\(([\s\S]*?)\n\);/g)) {
      const cols = new Set();
      for (const line of m[2].split('\n')) {
        const c = /^\s*([a-z_]+)\s+(text|bigint|bigserial|int|integer|double|timestamptz|boolean|bytea|jsonb|serial|smallint|real|numeric)\b/.exec(line);
        if (c) cols.add(c[1]);
      }
      tables.set(m[1], cols);
    }
  }
  if (tables.size === 0) throw new Error(`${p}: no CREATE TABLE found`);
  return tables;
}

// A small reporter: collects errors, prints them, sets the exit code.
class Report {
  constructor(name) {
    this.name = name;
    this.errors = [];
    this.notes = [];
  }
  error(msg) {
    this.errors.push(msg);
  }
  note(msg) {
    this.notes.push(msg);
  }
  finish(summary) {
    for (const n of this.notes) console.log(`${this.name}: ${n}`);
    for (const e of this.errors) console.error(`${this.name}: ERROR: ${e}`);
    if (this.errors.length) {
      console.error(`${this.name}: FAILED (${this.errors.length} error${this.errors.length > 1 ? 's' : ''})`);
      process.exitCode = 1;
    } else {
      console.log(`${this.name}: OK${summary ? ` (${summary})` : ''}`);
    }
  }
}

module.exports = {
  ROOT, rel, read, loadYaml, loadYamlDocs, loadContract, seriesTable, loadDatasources,
  migrationSql, loadSchema, Report,
};
