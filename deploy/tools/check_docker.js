#!/usr/bin/env node
// Checks of docker/*.Dockerfile and .dockerignore:
//   * dockerfile-utils (the parser/linter of the VS Code Docker language
//     server) reports no problem;
//   * multi-stage, final stage runs as a non-root USER, has an ENTRYPOINT;
//   * no secret baked in: no ENV/ARG whose name says password/token/secret
//     carries a value, no COPY of .env files or keys;
//   * every file COPY'd from the build context exists and is not excluded
//     by .dockerignore; the context excludes .git, build trees and .env.
// Also, with --emit-prometheus-k8s FILE, writes deploy/prometheus/prometheus-k8s.yml
// with its kubernetes_sd_configs replaced by a static target, for a promtool
// built without Kubernetes discovery (Debian's).
'use strict';

const fs = require('fs');
const path = require('path');
const YAML = require('yaml');
const { validate } = require('dockerfile-utils');
const lib = require('./lib');

const args = process.argv.slice(2);
const emitAt = args.indexOf('--emit-prometheus-k8s');
if (emitAt >= 0) {
  const cfg = lib.loadYaml('deploy/prometheus/prometheus-k8s.yml');
  for (const job of cfg.scrape_configs || []) {
    if (job.kubernetes_sd_configs) {
      delete job.kubernetes_sd_configs;
      job.static_configs = [{ targets: ['pod.example:9100'] }];
    }
  }
  fs.writeFileSync(args[emitAt + 1], YAML.stringify(cfg));
  process.exit(0);
}

const report = new lib.Report('docker');
const dockerignore = lib.read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
for (const must of ['.git', '**/.env']) {
  if (!dockerignore.includes(must)) report.error(`.dockerignore does not exclude ${must}`);
}
if (!dockerignore.some((l) => /^\/?build\*?$/.test(l))) report.error('.dockerignore does not exclude the build trees');

// Is a context path excluded by .dockerignore? (Enough of its syntax for our file.)
function ignored(p) {
  let out = false;
  for (const pat of dockerignore) {
    const neg = pat.startsWith('!');
    const glob = (neg ? pat.slice(1) : pat).replace(/^\//, '').replace(/\/$/, '');
    const re = new RegExp('^' + glob.split('**/').map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')).join('(?:.*/)?') + '(?:/.*)?$');
    if (re.test(p)) out = !neg;
  }
  return out;
}

const files = fs.readdirSync(path.join(lib.ROOT, 'docker')).filter((f) => f.endsWith('.Dockerfile')).sort();
if (!files.includes('cpu.Dockerfile') || !files.includes('learner-cuda.Dockerfile')) {
  report.error('docker/cpu.Dockerfile and docker/learner-cuda.Dockerfile are required');
}
for (const f of files) {
  const where = `docker/${f}`;
  const text = lib.read(where);
  for (const d of validate(text)) {
    report.error(`${where}:${d.range.start.line + 1}: ${d.message}`);
  }
  // Logical lines (continuations joined), comments dropped.
  const lines = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const froms = lines.filter((l) => /^FROM\s/i.test(l));
  if (froms.length < 2) report.error(`${where}: not multi-stage`);
  const lastFrom = lines.map((l) => /^FROM\s/i.test(l)).lastIndexOf(true);
  const final = lines.slice(lastFrom);
  const users = final.filter((l) => /^USER\s/i.test(l));
  if (users.length === 0) report.error(`${where}: the final stage has no USER`);
  else if (/^USER\s+(root|0)(:|\s|$)/i.test(users[users.length - 1])) report.error(`${where}: the final stage runs as root`);
  if (!final.some((l) => /^ENTRYPOINT\s/i.test(l))) report.error(`${where}: the final stage has no ENTRYPOINT`);
  for (const l of lines) {
    const m = /^(ENV|ARG)\s+(.*)$/i.exec(l);
    if (m) {
      for (const kv of m[2].matchAll(/([A-Za-z_][A-Za-z0-9_]*)(?:=("[^"]*"|\S*))?/g)) {
        if (/PASSWORD|TOKEN|SECRET|_KEY$/i.test(kv[1]) && kv[2]) report.error(`${where}: ${m[1]} ${kv[1]} bakes a secret into the image`);
      }
    }
    const c = /^(COPY|ADD)\s+(.*)$/i.exec(l);
    if (c && !/--from=/.test(c[2])) {
      const parts = c[2].split(/\s+/).filter((x) => !x.startsWith('--'));
      for (const src of parts.slice(0, -1)) {
        if (/\.env|\.pem$|\.key$|secrets/.test(src)) report.error(`${where}: copies ${src} into the image`);
        if (src === '.') continue;
        const clean = src.replace(/\/$/, '');
        // docker/prebuilt/ is staged by docker/stage-prebuilt.sh just before
        // a BINARIES=prebuilt build; it must not be excluded.
        const staged = clean === 'docker/prebuilt';
        if (!staged && !fs.existsSync(path.join(lib.ROOT, clean))) report.error(`${where}: COPY source ${src} does not exist`);
        else if (ignored(clean)) report.error(`${where}: COPY source ${src} is excluded by .dockerignore`);
      }
    }
  }
}
// Sources the build needs must survive .dockerignore.
for (const p of ['CMakeLists.txt', 'proto/ristretto.proto', 'common', 'env', 'learner', 'actor', 'coordinator', 'cli', 'deploy/studies', 'docker/entrypoint.sh']) {
  if (ignored(p)) report.error(`.dockerignore excludes ${p}, which the image build needs`);
}
for (const p of ['.git', 'build', 'build-l/CMakeCache.txt', 'deploy/.env']) {
  if (!ignored(p)) report.error(`.dockerignore lets ${p} into the build context`);
}
report.finish(`${files.length} Dockerfiles`);
