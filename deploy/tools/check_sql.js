#!/usr/bin/env node
// Runs the dashboards' SQL against a real PostgreSQL that has ristretto's
// schema (the migrations of coordinator/store/migrations.cc) and a small
// study in it, as the read-only grafana_reader role that
// deploy/postgres/init/10-grafana-reader.sh creates. scripts/check_deploy.sh
// starts the throw-away server and calls:
//
//   check_sql.js --migrations          print the schema SQL
//   check_sql.js --seed                print sample rows (a study of 4 trials)
//   check_sql.js --run QUERIES.json    run every query through `psql`
//                                      (PGHOST/PGDATABASE from the environment)
//
// Grafana macros are expanded as Grafana's PostgreSQL data source does;
// $study is the seeded study. Each query must succeed and return rows,
// time series must have a "time" column, and grafana_reader must not be
// able to write.
'use strict';

const { spawnSync } = require('child_process');
const lib = require('./lib');

const args = process.argv.slice(2);

if (args[0] === '--migrations') {
  process.stdout.write(lib.migrationSql().join('\n'));
  process.exit(0);
}

if (args[0] === '--seed') {
  const config = lib.read('deploy/studies/small.yaml').replace(/'/g, "''");
  process.stdout.write(`
INSERT INTO studies (id, name, config_text, state, created_at) VALUES
  (1, 'small', '${config}', 'running', now() - interval '50 minutes');
INSERT INTO members (id, kind, address) VALUES ('learner-0', 'learner', '10.0.0.1:50051');
INSERT INTO trials (id, study_id, number, state, score, fail_reason, created_at, finished_at) VALUES
  (1, 1, 0, 'complete', 0.42, '', now() - interval '40 minutes', now() - interval '30 minutes'),
  (2, 1, 1, 'pruned',   NULL, '', now() - interval '35 minutes', now() - interval '25 minutes'),
  (3, 1, 2, 'complete', 0.77, '', now() - interval '30 minutes', now() - interval '10 minutes'),
  (4, 1, 3, 'running',  NULL, '', now() - interval '5 minutes',  NULL),
  (5, 1, 4, 'failed',   NULL, 'learner lost twice', now() - interval '20 minutes', now() - interval '15 minutes');
INSERT INTO params (trial_id, position, name, value) VALUES
  (1, 0, 'learning_rate', '0.0003'), (1, 1, 'gamma', '0.95'),
  (3, 0, 'learning_rate', '0.001'),  (3, 1, 'gamma', '0.9');
INSERT INTO runs (id, trial_id, study_id, fold, state, config_json, attempts, member_id, lease_expires_at, env_steps, checkpoint_dir) VALUES
  (1, 1, 1, 0, 'done',   '{}', 1, NULL, NULL, 20000, '/data/runs/small/trial-0/fold-0'),
  (2, 1, 1, 1, 'done',   '{}', 1, NULL, NULL, 20000, '/data/runs/small/trial-0/fold-1'),
  (3, 3, 1, 0, 'done',   '{}', 1, NULL, NULL, 20000, '/data/runs/small/trial-2/fold-0'),
  (4, 4, 1, 0, 'leased', '{}', 1, 'learner-0', now() + interval '30 seconds', 5000, '/data/runs/small/trial-3/fold-0'),
  (5, 4, 1, 1, 'queued', '{}', 0, NULL, NULL, 0, '/data/runs/small/trial-3/fold-1');
INSERT INTO intermediate_values (run_id, trial_id, study_id, step, value, reported_at) VALUES
  (1, 1, 1, 5000, 0.1, now() - interval '38 minutes'), (1, 1, 1, 10000, 0.3, now() - interval '34 minutes'),
  (3, 3, 1, 5000, 0.2, now() - interval '25 minutes'), (3, 3, 1, 10000, 0.6, now() - interval '15 minutes'),
  (4, 4, 1, 5000, 0.05, now() - interval '2 minutes');
INSERT INTO fold_metrics (run_id, trial_id, fold, sharpe, benchmark_sharpe, sortino, max_drawdown, calmar, total_return, benchmark_return, trades, env_steps) VALUES
  (1, 1, 0, 0.40, 0.2, 0.5, 0.10, 1.0, 0.05, 0.02, 12, 20000),
  (2, 1, 1, 0.44, 0.1, 0.6, 0.12, 1.1, 0.06, 0.01, 10, 20000),
  (3, 3, 0, 0.77, 0.2, 0.9, 0.08, 2.0, 0.09, 0.02, 15, 20000);
`);
  process.exit(0);
}

if (args[0] !== '--run' || !args[1]) {
  console.error('usage: check_sql.js --migrations | --seed | --run QUERIES.json');
  process.exit(2);
}

const report = new lib.Report('sql');
const FROM = "'2000-01-01T00:00:00Z'";
const TO = "'2100-01-01T00:00:00Z'";
const seconds = (iv) => {
  const m = /^'?(\d+)([smhd])'?$/.exec(iv.trim());
  if (!m) throw new Error(`unsupported interval ${iv}`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2]];
};
function expand(sql) {
  return sql
    .replace(/\$__timeFilter\(([^)]+)\)/g, (_, c) => `${c} BETWEEN ${FROM} AND ${TO}`)
    .replace(/\$__timeGroupAlias\(([^,]+),([^)]+)\)/g, (_, c, iv) => `floor(extract(epoch from ${c})/${seconds(iv)})*${seconds(iv)} AS "time"`)
    .replace(/\$__timeGroup\(([^,]+),([^)]+)\)/g, (_, c, iv) => `floor(extract(epoch from ${c})/${seconds(iv)})*${seconds(iv)}`)
    .replace(/\$__timeFrom\(\)/g, FROM)
    .replace(/\$__timeTo\(\)/g, TO)
    .replace(/\$\{?study\}?/g, "'small'");
}
function psql(sql, user) {
  const r = spawnSync('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-A', '-F', '\t', '-P', 'footer=off', '-U', user, '-c', sql], { encoding: 'utf8' });
  return { ok: r.status === 0, out: r.stdout || '', err: (r.stderr || '').trim() };
}

const queries = JSON.parse(require('fs').readFileSync(args[1], 'utf8'));
for (const q of queries) {
  let sql;
  try {
    sql = expand(q.sql);
  } catch (e) {
    report.error(`${q.where}: ${e.message}`);
    continue;
  }
  const r = psql(sql, 'grafana_reader');
  if (!r.ok) {
    report.error(`${q.where}: ${r.err}\n  SQL: ${sql}`);
    continue;
  }
  const lines = r.out.split('\n').filter((l) => l.length);
  const header = (lines[0] || '').split('\t');
  if (lines.length < 2) report.error(`${q.where}: no rows on the sample study`);
  if (q.format === 'time_series' && !header.includes('time')) report.error(`${q.where}: no "time" column (${header.join(', ')})`);
  if (process.env.VERBOSE) console.log(`${q.where}:\n  ${lines.slice(0, 6).join('\n  ')}`);
}
const write = psql("INSERT INTO members (id, kind) VALUES ('intruder', 'actor')", 'grafana_reader');
if (write.ok) report.error('grafana_reader could write to the database');
const owner = psql('SELECT count(*) FROM trials', 'grafana_reader');
if (!owner.ok) report.error(`grafana_reader cannot read tables created after it: ${owner.err}`);
report.finish(`${queries.length} queries as grafana_reader, writes refused`);
