#!/usr/bin/env node
// Policy check of deploy/docker-compose.yml, on the configuration
// `docker-compose config` printed (anchors merged, variables substituted
// from deploy/.env.example) and on the raw file:
//   * the services of the design are there; nothing depends on a service of
//     an optional profile;
//   * every long-running service restarts and has a health check; postgres'
//     is pg_isready and it keeps its data in a named volume;
//   * the GPU learner reserves a GPU (deploy.resources.reservations.devices,
//     capabilities [gpu]) in profile gpu; learner-cpu is profile cpu;
//   * actors scale: no container_name, no published ports;
//   * bind-mounted files exist; Prometheus and Grafana get their config;
//   * no literal secrets: passwords and tokens come from ${VARIABLES}; every
//     variable is in deploy/.env.example or has a default; no command line
//     carries --token or a DSN password (issue 15: secrets never in argv);
//   * TLS and the token everywhere: the coordinator and the learners serve
//     mutual TLS (--tls-cert, --tls-key, --tls-ca), actors present a client
//     certificate, all read the TLS files from the `tls` volume filled by the
//     one-shot tls-init service (which they wait for) and get a required
//     ${RISTRETTO_TOKEN:?...}.
// Usage: node check_compose.js NORMALISED_CONFIG.yml
'use strict';

const fs = require('fs');
const path = require('path');
const YAML = require('yaml');
const lib = require('./lib');

const report = new lib.Report('compose');
const COMPOSE = 'deploy/docker-compose.yml';
const ENV_EXAMPLE = 'deploy/.env.example';
const normalised = process.argv[2];
if (!normalised) {
  console.error('usage: check_compose.js NORMALISED_CONFIG.yml');
  process.exit(2);
}
const cfg = YAML.parse(fs.readFileSync(normalised, 'utf8'));
const raw = lib.read(COMPOSE);
const services = cfg.services || {};

const expected = ['postgres', 'prometheus', 'grafana', 'coordinator', 'learner', 'learner-cpu', 'actor', 'cli'];
for (const s of expected) if (!services[s]) report.error(`service ${s} is missing`);
// One-shot services: no restart policy or health check.
const oneOff = new Set(['cli', 'tls-init']);

for (const [name, s] of Object.entries(services)) {
  const where = `service ${name}`;
  const profiles = s.profiles || [];
  if (!oneOff.has(name)) {
    if (!['always', 'unless-stopped', 'on-failure'].includes(s.restart)) report.error(`${where}: no restart policy`);
    if (!s.healthcheck || !s.healthcheck.test || s.healthcheck.disable) report.error(`${where}: no health check`);
  }
  for (const dep of Object.keys(s.depends_on || {})) {
    if (!services[dep]) report.error(`${where}: depends on unknown service ${dep}`);
    else if ((services[dep].profiles || []).length && !(services[dep].profiles || []).every((p) => profiles.includes(p))) {
      report.error(`${where}: depends on ${dep}, which runs only in profile(s) ${services[dep].profiles}`);
    }
  }
  for (const v of s.volumes || []) {
    const spec = typeof v === 'string' ? v : `${v.source}:${v.target}`;
    const src = typeof v === 'string' ? v.split(':')[0] : v.source;
    if (src && src.startsWith('/')) {
      // deploy/secrets/ is made by scripts/compose_up.sh on the first run.
      const made = path.relative(path.resolve('deploy/secrets'), src).split(path.sep)[0] !== '..';
      if (!fs.existsSync(src) && !made) report.error(`${where}: bind mount source ${src} does not exist`);
    } else if (src && !(cfg.volumes || {})[src]) {
      report.error(`${where}: volume ${src} is not declared (${spec})`);
    }
  }
  const env = s.environment || {};
  const envKeys = Array.isArray(env) ? env.map((e) => e.split('=')[0]) : Object.keys(env);
  for (const k of envKeys) {
    if (!/PASSWORD|TOKEN|SECRET/.test(k) || /_FILE$/.test(k)) continue;
    // The raw file must take it from a ${VARIABLE}, never a literal.
    for (const l of raw.split('\n').filter((x) => new RegExp(`^\\s*${k}:`).test(x))) {
      if (!/\$\{[A-Z_][A-Z0-9_]*(:?[-?][^}]*)?\}/.test(l)) report.error(`${where}: ${k} is set literally in ${COMPOSE}: ${l.trim()}`);
    }
  }
  // Secrets never in argv (every local user reads it with ps); the
  // binaries refuse --token VALUE and a --db DSN with a password.
  const argv = [].concat(s.command || [], s.entrypoint || []).map(String);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (/^--token(=|$)/.test(a) || /password=/i.test(a) || /^postgres(ql)?:\/\/[^/@]*:[^/@]*@/i.test(a) ||
        (a === '--db' && /password=|:\/\/[^/@]*:[^/@]*@/i.test(argv[i + 1] || ''))) {
      report.error(`${where}: argument ${a} carries a secret; use RISTRETTO_TOKEN(_FILE), PGPASSWORD(_FILE) or RISTRETTO_DB`);
    }
  }
  if (s.build && !fs.existsSync(path.join(s.build.context, s.build.dockerfile || 'Dockerfile'))) {
    report.error(`${where}: Dockerfile ${s.build.dockerfile} not found in ${s.build.context}`);
  }
}

const pg = services.postgres || {};
if (!pg.healthcheck || !JSON.stringify(pg.healthcheck.test).includes('pg_isready')) report.error('postgres: the health check must use pg_isready');
if (!(pg.volumes || []).some((v) => (typeof v === 'string' ? v : v.target).includes('/var/lib/postgresql/data'))) {
  report.error('postgres: no volume for /var/lib/postgresql/data');
}

const learner = services.learner || {};
const devices = (((learner.deploy || {}).resources || {}).reservations || {}).devices || [];
if (!devices.some((d) => (d.capabilities || []).includes('gpu'))) report.error('learner: no GPU reservation (deploy.resources.reservations.devices with capabilities [gpu])');
if (JSON.stringify(learner.profiles) !== JSON.stringify(['gpu'])) report.error('learner: must be in profile gpu');
const lcpu = services['learner-cpu'] || {};
if (JSON.stringify(lcpu.profiles) !== JSON.stringify(['cpu'])) report.error('learner-cpu: must be in profile cpu');
if (lcpu.deploy && JSON.stringify(lcpu.deploy).includes('gpu')) report.error('learner-cpu: must not reserve a GPU');

const actor = services.actor || {};
if (actor.container_name) report.error('actor: container_name prevents --scale');
if ((actor.ports || []).length) report.error('actor: published ports prevent --scale');
if ((actor.profiles || []).length) report.error('actor: must start without a profile');

const mounts = (name) => (services[name] && services[name].volumes || []).map((v) => (typeof v === 'string' ? v : `${v.source}:${v.target}`)).join(' ');
if (!/prometheus\.yml:\/etc\/prometheus\/prometheus\.yml/.test(mounts('prometheus'))) report.error('prometheus: deploy/prometheus/prometheus.yml is not mounted');
if (!/provisioning:\/etc\/grafana\/provisioning/.test(mounts('grafana'))) report.error('grafana: provisioning is not mounted');
if (!/dashboards:\/etc\/grafana\/dashboards\/ristretto/.test(mounts('grafana'))) report.error('grafana: dashboards are not mounted where provisioning/dashboards/dashboards.yml looks');

// Variables: each one used is in .env.example or has a default.
const envExample = new Map();
for (const line of lib.read(ENV_EXAMPLE).split('\n')) {
  const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
  if (m) envExample.set(m[1], m[2]);
}
const used = new Set();
for (const m of raw.matchAll(/\$\{([A-Z_][A-Z0-9_]*)(:?[-?])?([^}]*)\}/g)) {
  used.add(m[1]);
  if (!envExample.has(m[1]) && !(m[2] && m[2].endsWith('-'))) report.error(`variable ${m[1]} has no default and is not in ${ENV_EXAMPLE}`);
}
for (const k of envExample.keys()) {
  if (!used.has(k) && k !== 'COMPOSE_PROFILES') report.error(`${ENV_EXAMPLE}: ${k} is not used by ${COMPOSE}`);
}
if (!envExample.has('COMPOSE_PROFILES')) report.error(`${ENV_EXAMPLE}: no COMPOSE_PROFILES (which learner runs)`);

// Prometheus scrapes every ristretto service on its metrics port.
const prom = lib.loadYaml('deploy/prometheus/prometheus.yml');
const scraped = JSON.stringify(prom.scrape_configs);
for (const name of ['coordinator', 'learner', 'actor']) {
  if (!scraped.includes(`"${name}`)) report.error(`deploy/prometheus/prometheus.yml does not scrape ${name}`);
  const cmd = (services[name] && services[name].command) || [];
  if (!cmd.includes('--metrics-port=9100')) report.error(`service ${name}: no --metrics-port=9100`);
}

// TLS and the token.
const tlsFlags = {
  coordinator: ['--tls-cert=', '--tls-key=', '--tls-ca='],
  learner: ['--tls-cert=', '--tls-key=', '--tls-ca='],
  'learner-cpu': ['--tls-cert=', '--tls-key=', '--tls-ca='],
  actor: ['--tls-ca=', '--tls-cert=', '--tls-key='],
};
const tlsInit = services['tls-init'] || {};
if (!JSON.stringify(tlsInit.entrypoint || []).includes('ristretto-install-tls')) report.error('tls-init: must run ristretto-install-tls');
for (const [name, flags] of Object.entries(tlsFlags)) {
  const s = services[name] || {};
  const cmd = (s.command || []).map(String);
  for (const f of flags) if (!cmd.some((a) => a.startsWith(f))) report.error(`service ${name}: no ${f}... argument (TLS)`);
  if (!(s.volumes || []).some((v) => (typeof v === 'string' ? v : `${v.source}:${v.target}`).startsWith('tls:'))) {
    report.error(`service ${name}: the tls volume is not mounted`);
  }
  const dep = (s.depends_on || {})['tls-init'];
  if (!dep || dep.condition !== 'service_completed_successfully') report.error(`service ${name}: does not wait for tls-init to complete`);
}
// Each process holds its role's token as RISTRETTO_TOKEN, all required
// (${VAR:?...}): the cluster token (the operators') the coordinator only,
// the learners' token both learners, the actors' token the actors; the
// coordinator also reads the actors' and the learners' tokens, which it
// checks.
// (From the file as written: the normalised config has the values filled in.)
const rawServices = YAML.parse(raw).services || {};
const envOf = (name) => ((rawServices[name] || {}).environment) || {};
const TOKEN_OF = {
  actor: ['RISTRETTO_ACTOR_TOKEN', "actors hold their own token, not the cluster token"],
  learner: ['RISTRETTO_LEARNER_TOKEN', "learners hold their own token, not the cluster token"],
  'learner-cpu': ['RISTRETTO_LEARNER_TOKEN', "learners hold their own token, not the cluster token"],
};
for (const name of Object.keys(rawServices)) {
  const env = envOf(name);
  if (!('RISTRETTO_TOKEN' in env)) continue;
  const [variable, why] = TOKEN_OF[name] || ['RISTRETTO_TOKEN', 'the cluster token, required'];
  const want = '${' + variable + ':?';
  if (!String(env.RISTRETTO_TOKEN).startsWith(want)) {
    report.error(`service ${name}: RISTRETTO_TOKEN must be ${want}...} (${why})`);
  }
  // The cluster token goes to the coordinator alone.
  if (name !== 'coordinator' && Object.values(env).some((v) => String(v).includes('${RISTRETTO_TOKEN'))) {
    report.error(`service ${name}: holds the cluster token (only the coordinator may)`);
  }
}
for (const name of ['coordinator', 'learner', 'learner-cpu', 'actor']) {
  if (!('RISTRETTO_TOKEN' in envOf(name))) report.error(`service ${name}: no RISTRETTO_TOKEN`);
}
for (const variable of ['RISTRETTO_ACTOR_TOKEN', 'RISTRETTO_LEARNER_TOKEN']) {
  if (!String(envOf('coordinator')[variable] || '').startsWith('${' + variable + ':?')) {
    report.error(`service coordinator: ${variable} must be required (\${${variable}:?...})`);
  }
}

report.finish(`${Object.keys(services).length} services`);
