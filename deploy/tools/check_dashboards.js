#!/usr/bin/env node
// Structural check of the Grafana dashboards (deploy/grafana/dashboards/*.json):
//   * valid JSON; unique uid and title; schemaVersion; panels;
//   * every panel: unique integer id, known type, a grid position inside the
//     24 columns that overlaps no other panel, a provisioned data source, at
//     least one query, unique refIds, no mixed data sources;
//   * Prometheus queries: single-line, only known variables, every metric
//     name, matcher label, grouping label and legend label exists in
//     docs/metrics.md;
//   * PostgreSQL queries: every table and alias.column exists in the schema
//     of coordinator/store/migrations.cc, time series have a time column;
//   * template variables: provisioned data source, label_values() of known
//     metrics and labels;
//   * deploy/promql.txt lists exactly the dashboards' PromQL (Grafana
//     variables substituted), one expression per line.
// Usage: node check_dashboards.js [--write-promql] [--emit-promql FILE] [--emit-sql FILE]
'use strict';

const fs = require('fs');
const path = require('path');
const lib = require('./lib');
const { analyze, substituteGrafana } = require('./promql');

const DASH_DIR = process.env.DASHBOARD_DIR || 'deploy/grafana/dashboards';
const PROMQL_TXT = 'deploy/promql.txt';
const PANEL_TYPES = new Set([
  'row', 'timeseries', 'stat', 'table', 'heatmap', 'gauge', 'bargauge', 'text', 'piechart',
  'barchart', 'state-timeline', 'status-history', 'histogram', 'logs',
]);
const PROM_TYPE = 'prometheus';
const PG_TYPES = new Set(['grafana-postgresql-datasource', 'postgres']);
const ALWAYS_LABELS = new Set(['job', 'instance', '__name__']);
const SQL_MACROS = new Set([
  '__timeFilter', '__timeFrom', '__timeTo', '__timeGroup', '__timeGroupAlias', '__unixEpochFilter',
  '__unixEpochGroup', '__unixEpochGroupAlias', '__interval', '__interval_ms', '__schema', '__table', '__column',
]);
const SQL_WORDS = new Set([
  'where', 'on', 'join', 'left', 'right', 'inner', 'outer', 'full', 'cross', 'group', 'order', 'limit',
  'union', 'as', 'using', 'natural', 'having', 'window', 'offset', 'lateral',
]);

const args = process.argv.slice(2);
const report = new lib.Report('dashboards');
const contract = lib.loadContract();
const series = lib.seriesTable(contract);
const datasources = lib.loadDatasources();
const schema = lib.loadSchema();

function panelsOf(dash) {
  const out = [];
  for (const p of dash.panels || []) {
    out.push(p);
    if (p.type === 'row') for (const inner of p.panels || []) out.push(inner);
  }
  return out;
}

function checkPromQL(where, rawExpr, legend, templateVars) {
  if (typeof rawExpr !== 'string' || !rawExpr.trim()) {
    report.error(`${where}: empty PromQL expression`);
    return null;
  }
  if (/[\r\n]/.test(rawExpr)) report.error(`${where}: PromQL must be one line (deploy/promql.txt has one per line)`);
  const sub = substituteGrafana(rawExpr, templateVars);
  for (const e of sub.errors) report.error(`${where}: ${e}`);
  const a = analyze(sub.expr);
  for (const e of a.errors) report.error(`${where}: ${e} in ${rawExpr}`);
  if (a.selectors.length === 0) report.error(`${where}: no metric in ${rawExpr}`);
  const available = new Set(ALWAYS_LABELS);
  for (const s of a.selectors) {
    const known = series.get(s.metric);
    if (!known) {
      report.error(`${where}: metric ${s.metric} is not in docs/metrics.md`);
      continue;
    }
    for (const l of known.labels) available.add(l);
    for (const m of s.matchers) {
      if (!known.labels.has(m.label) && !ALWAYS_LABELS.has(m.label)) {
        report.error(`${where}: ${s.metric} has no label ${m.label} (docs/metrics.md)`);
      }
    }
  }
  for (const g of a.groupings) {
    if (!available.has(g)) report.error(`${where}: grouping label ${g} is on none of the metrics of ${rawExpr}`);
  }
  if (legend) {
    for (const m of legend.matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)) {
      if (!available.has(m[1])) report.error(`${where}: legend {{${m[1]}}} is not a label of ${rawExpr}`);
    }
  }
  return sub.expr;
}

// Table/alias map of a query: FROM/JOIN <table> [AS] [alias].
function checkSql(where, sql, format, templateVars) {
  if (typeof sql !== 'string' || !sql.trim()) {
    report.error(`${where}: empty SQL`);
    return;
  }
  for (const m of sql.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)) {
    if (!templateVars.has(m[1]) && !SQL_MACROS.has(m[1])) report.error(`${where}: unknown variable $${m[1]} in SQL`);
  }
  if (/;\s*\S/.test(sql)) report.error(`${where}: one statement per query`);
  if (!/^\s*(SELECT|WITH)\b/i.test(sql)) report.error(`${where}: a dashboard query must be a SELECT`);
  const aliases = new Map();
  for (const m of sql.matchAll(/\b(?:FROM|JOIN)\s+([a-z_][a-z0-9_]*)(?:\s+(?:AS\s+)?([a-z_][a-z0-9_]*))?/gi)) {
    const table = m[1].toLowerCase();
    if (!schema.has(table)) {
      report.error(`${where}: table ${table} is not in coordinator/store/migrations.cc`);
      continue;
    }
    aliases.set(table, table);
    if (m[2] && !SQL_WORDS.has(m[2].toLowerCase())) aliases.set(m[2], table);
  }
  const stripped = sql.replace(/'(?:[^']|'')*'/g, "''");
  for (const m of stripped.matchAll(/\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\b/gi)) {
    const table = aliases.get(m[1]);
    if (!table) {
      report.error(`${where}: ${m[0]}: ${m[1]} is no table or alias of the query`);
    } else if (!schema.get(table).has(m[2])) {
      report.error(`${where}: ${m[0]}: table ${table} has no column ${m[2]}`);
    }
  }
  if (!['table', 'time_series'].includes(format)) report.error(`${where}: format must be table or time_series`);
  if (format === 'time_series' && !/AS\s+"time"|\$__timeGroupAlias|\$__unixEpochGroupAlias/i.test(sql)) {
    report.error(`${where}: a time_series query needs a column named "time"`);
  }
}

function overlaps(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

const files = fs.readdirSync(path.resolve(lib.ROOT, DASH_DIR)).filter((f) => f.endsWith('.json')).sort();
if (files.length === 0) report.error(`no dashboards in ${DASH_DIR}`);
const uids = new Map();
const titles = new Map();
const promql = [];
const sqlQueries = [];
let panelCount = 0;
let queryCount = 0;

for (const file of files) {
  const where0 = `${DASH_DIR}/${file}`;
  let dash;
  try {
    dash = JSON.parse(lib.read(where0));
  } catch (e) {
    report.error(`${where0}: invalid JSON: ${e.message}`);
    continue;
  }
  for (const key of ['uid', 'title']) {
    if (typeof dash[key] !== 'string' || !dash[key]) report.error(`${where0}: no ${key}`);
  }
  if (dash.uid && dash.uid.length > 40) report.error(`${where0}: uid longer than 40 characters`);
  if (uids.has(dash.uid)) report.error(`${where0}: uid ${dash.uid} also in ${uids.get(dash.uid)}`);
  uids.set(dash.uid, file);
  if (titles.has(dash.title)) report.error(`${where0}: title "${dash.title}" also in ${titles.get(dash.title)}`);
  titles.set(dash.title, file);
  if (!Number.isInteger(dash.schemaVersion)) report.error(`${where0}: no integer schemaVersion`);
  if (dash.id !== undefined && dash.id !== null) report.error(`${where0}: provisioned dashboards must not carry an id`);
  if (!Array.isArray(dash.panels) || dash.panels.length === 0) {
    report.error(`${where0}: no panels`);
    continue;
  }

  // Template variables.
  const vars = (dash.templating && dash.templating.list) || [];
  const templateVars = new Set();
  for (const v of vars) {
    const where = `${where0}: variable ${v.name}`;
    if (!v.name || templateVars.has(v.name)) report.error(`${where}: missing or duplicate name`);
    templateVars.add(v.name);
    if (v.type !== 'query') continue;
    const ds = v.datasource || {};
    if (!datasources.has(ds.uid)) {
      report.error(`${where}: data source uid ${ds.uid} is not provisioned`);
      continue;
    }
    const q = typeof v.query === 'string' ? v.query : v.query && v.query.query;
    if (!q) report.error(`${where}: no query`);
    if (datasources.get(ds.uid) === PROM_TYPE && q) {
      const m = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$/.exec(q);
      if (!m) {
        report.error(`${where}: expected label_values(metric, label), got ${q}`);
      } else if (!series.has(m[1])) {
        report.error(`${where}: metric ${m[1]} is not in docs/metrics.md`);
      } else if (!series.get(m[1]).labels.has(m[2]) && !ALWAYS_LABELS.has(m[2])) {
        report.error(`${where}: ${m[1]} has no label ${m[2]}`);
      }
    } else if (PG_TYPES.has(datasources.get(ds.uid)) && q) {
      checkSql(where, q, 'table', templateVars);
      sqlQueries.push({ where, sql: q, format: 'table', variable: true });
    }
  }

  // Panels.
  const ids = new Set();
  const placed = [];
  for (const p of panelsOf(dash)) {
    panelCount++;
    const where = `${where0}: panel ${p.id} "${p.title}"`;
    if (!Number.isInteger(p.id)) report.error(`${where}: id is not an integer`);
    if (ids.has(p.id)) report.error(`${where}: duplicate panel id ${p.id}`);
    ids.add(p.id);
    if (!PANEL_TYPES.has(p.type)) report.error(`${where}: unknown panel type ${p.type}`);
    if (!p.title) report.error(`${where}: no title`);
    const g = p.gridPos || {};
    if (![g.x, g.y, g.w, g.h].every(Number.isInteger) || g.w < 1 || g.h < 1 || g.x < 0 || g.y < 0 || g.x + g.w > 24) {
      report.error(`${where}: bad gridPos ${JSON.stringify(p.gridPos)}`);
    } else {
      for (const q of placed) if (overlaps(g, q.g)) report.error(`${where}: overlaps panel ${q.id}`);
      placed.push({ g, id: p.id });
    }
    if (p.type === 'row' || p.type === 'text') continue;

    const ds = p.datasource || {};
    const dsType = datasources.get(ds.uid);
    if (!dsType) {
      report.error(`${where}: data source uid ${ds.uid} is not provisioned`);
      continue;
    }
    if (ds.type !== dsType) report.error(`${where}: data source ${ds.uid} is of type ${dsType}, not ${ds.type}`);
    if (!Array.isArray(p.targets) || p.targets.length === 0) {
      report.error(`${where}: no queries`);
      continue;
    }
    const refIds = new Set();
    for (const t of p.targets) {
      queryCount++;
      const tw = `${where} query ${t.refId}`;
      if (!t.refId || refIds.has(t.refId)) report.error(`${tw}: missing or duplicate refId`);
      refIds.add(t.refId);
      if (t.hide) report.error(`${tw}: hidden query`);
      if (t.datasource && t.datasource.uid !== ds.uid) report.error(`${tw}: data source differs from the panel's`);
      if (dsType === PROM_TYPE) {
        const expr = checkPromQL(tw, t.expr, t.legendFormat, templateVars);
        if (expr && !promql.includes(expr)) promql.push(expr);
      } else if (PG_TYPES.has(dsType)) {
        if (t.rawQuery !== true) report.error(`${tw}: SQL queries must be raw (rawQuery: true)`);
        checkSql(tw, t.rawSql, t.format, templateVars);
        sqlQueries.push({ where: tw, sql: t.rawSql, format: t.format });
      } else {
        report.error(`${tw}: unsupported data source type ${dsType}`);
      }
    }
  }
}

// deploy/promql.txt: exactly the dashboards' expressions, one per line.
const wanted = promql.join('\n') + '\n';
if (args.includes('--write-promql')) {
  fs.writeFileSync(path.join(lib.ROOT, PROMQL_TXT), wanted);
  report.note(`wrote ${PROMQL_TXT} (${promql.length} expressions)`);
} else {
  let have = '';
  try {
    have = lib.read(PROMQL_TXT);
  } catch (e) {
    report.error(`${PROMQL_TXT} is missing (node deploy/tools/check_dashboards.js --write-promql)`);
  }
  if (have && have !== wanted) {
    const haveSet = new Set(have.split('\n').filter(Boolean));
    const wantSet = new Set(promql);
    for (const e of promql) if (!haveSet.has(e)) report.error(`${PROMQL_TXT} lacks: ${e}`);
    for (const e of haveSet) if (!wantSet.has(e)) report.error(`${PROMQL_TXT} has an expression no dashboard uses: ${e}`);
    if (report.errors.length === 0) report.error(`${PROMQL_TXT} is out of order (node deploy/tools/check_dashboards.js --write-promql)`);
  }
}
const emit = (flag, content) => {
  const i = args.indexOf(flag);
  if (i >= 0) fs.writeFileSync(args[i + 1], content);
};
// For promtool: every expression as a recording rule.
emit('--emit-promql', `groups:\n  - name: dashboards\n    rules:\n${promql
  .map((e, k) => `      - record: ristretto:dashboard_expr_${k}\n        expr: ${JSON.stringify(e)}\n`)
  .join('')}`);
emit('--emit-sql', JSON.stringify(sqlQueries, null, 2));

report.finish(`${files.length} dashboards, ${panelCount} panels, ${queryCount} queries, ` +
  `${promql.length} distinct PromQL expressions, ${sqlQueries.length} SQL queries`);
