#!/usr/bin/env node
// Client-side validation of the Kubernetes manifests (no cluster needed).
//
// For each kustomization root (deploy/k8s and deploy/k8s/external-db) the
// resources are resolved the way kustomize does (files and directories,
// recursively; `namespace:` applied), then every object is
//   1. validated against the Kubernetes OpenAPI schema with the npm package
//      kubernetes-models (types, required fields, enums, formats);
//   2. checked for unknown fields (a typo such as `nodeSelecter` passes the
//      OpenAPI schema, which allows extra properties) using the same
//      package's type declarations;
//   3. cross-checked: unique names, selectors matching pod labels, Services
//      selecting pods and naming their ports, probes and volume mounts
//      naming existing ports and volumes, ConfigMaps/ServiceAccounts/Roles
//      that exist, Secrets that are the documented ones, Prometheus
//      annotations naming a container port, pods hardened (restricted
//      Pod Security profile), the learner on a GPU and the actors scalable;
//   4. ConfigMaps: under the 1 MiB object limit and the 256 KiB
//      last-applied annotation limit of `kubectl apply`.
// Usage: node check_k8s.js [ROOT_DIR...]
'use strict';

const fs = require('fs');
const path = require('path');
const lib = require('./lib');

const report = new lib.Report('k8s');
const NAMESPACE = 'ristretto';

// Secrets created by hand (deploy/README.md), with their keys.
const EXTERNAL_SECRETS = {
  'ristretto-db': new Set(['dsn', 'password', 'grafana-password']),
  'ristretto-grafana': new Set(['admin-password']),
  'ristretto-token': new Set(['token']),
  'ristretto-actor-token': new Set(['token']),
  'ristretto-learner-token': new Set(['token']),
  'ristretto-tls': new Set(['ca.pem', 'server.pem', 'server.key', 'client.pem', 'client.key']),
};
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'PersistentVolume', 'StorageClass']);

// ---------------------------------------------------------------- kustomize
function resolveKustomization(dir, seen = new Set()) {
  const abs = path.resolve(lib.ROOT, dir);
  if (seen.has(abs)) throw new Error(`${lib.rel(abs)}: kustomization cycle`);
  seen.add(abs);
  const kfile = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'].map((f) => path.join(abs, f)).find(fs.existsSync);
  if (!kfile) throw new Error(`${lib.rel(abs)}: no kustomization.yaml`);
  const k = lib.loadYaml(kfile);
  const known = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'images', 'commonLabels', 'labels',
    'commonAnnotations', 'patches', 'components', 'configMapGenerator', 'secretGenerator', 'generatorOptions',
    'replicas', 'namePrefix', 'nameSuffix']);
  for (const key of Object.keys(k)) {
    if (!known.has(key)) report.error(`${lib.rel(kfile)}: unknown kustomization field ${key}`);
  }
  for (const key of ['patches', 'components', 'configMapGenerator', 'secretGenerator', 'namePrefix', 'nameSuffix', 'commonLabels', 'labels']) {
    if (k[key]) report.error(`${lib.rel(kfile)}: ${key} is not supported by this checker; extend deploy/tools/check_k8s.js`);
  }
  let objects = [];
  for (const r of k.resources || []) {
    const target = path.resolve(abs, r);
    if (!fs.existsSync(target)) {
      report.error(`${lib.rel(kfile)}: resource ${r} does not exist`);
      continue;
    }
    if (fs.statSync(target).isDirectory()) {
      objects = objects.concat(resolveKustomization(target, new Set(seen)));
    } else {
      if (!target.startsWith(abs + path.sep)) {
        report.error(`${lib.rel(kfile)}: file ${r} is outside the kustomization root (kustomize refuses it)`);
      }
      lib.loadYamlDocs(target).forEach((obj, i) => objects.push({ obj, file: `${lib.rel(target)}#${i + 1}` }));
    }
  }
  if (k.namespace) {
    for (const o of objects) {
      if (!CLUSTER_SCOPED.has(o.obj.kind) && o.obj.metadata) o.obj.metadata.namespace = k.namespace;
    }
  }
  if (k.replicas) {
    for (const r of k.replicas) {
      const o = objects.find((x) => x.obj.metadata && x.obj.metadata.name === r.name && x.obj.spec && 'replicas' in x.obj.spec);
      if (!o) report.error(`${lib.rel(kfile)}: replicas: no workload named ${r.name}`);
      else o.obj.spec.replicas = r.count;
    }
  }
  return objects;
}

// ------------------------------------------------------- schema validation
function modelFor(apiVersion, kind) {
  const group = apiVersion.includes('/') ? apiVersion : `v1`;
  const mod = path.join('kubernetes-models', group, kind);
  try {
    return require(mod)[kind];
  } catch (e) {
    return null;
  }
}

// Known fields of every Kubernetes type, from kubernetes-models' .d.ts files:
// Map global interface name -> Map field -> type string.
let typeIndex = null;
function loadTypeIndex() {
  const roots = [path.dirname(require.resolve('kubernetes-models/package.json')),
    path.dirname(require.resolve('@kubernetes-models/apimachinery/package.json'))];
  const index = new Map();
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.d.ts')) parseDts(fs.readFileSync(p, 'utf8'), index);
    }
  };
  roots.forEach(walk);
  return index;
}

function parseDts(text, index) {
  const src = text.replace(/\/\*[\s\S]*?\*\//g, '');
  const aliases = new Map(); // local -> global
  for (const m of src.matchAll(/export \{([^}]*)\}/g)) {
    for (const part of m[1].split(',')) {
      const mm = /(\w+)\s+as\s+(\w+)/.exec(part);
      if (mm) aliases.set(mm[1], mm[2]);
    }
  }
  for (const m of src.matchAll(/export interface (\w+)(?:\s+extends\s+[\w<>, ]+)?\s*\{/g)) {
    let i = m.index + m[0].length;
    let depth = 1;
    const start = i;
    while (i < src.length && depth > 0) {
      if (src[i] === '{') depth++;
      else if (src[i] === '}') depth--;
      i++;
    }
    const body = src.slice(start, i - 1);
    const fields = new Map();
    let j = 0;
    const re = /"([^"]+)"\??:\s*/g;
    // Read `"name"?: type;` at brace depth 0 of the body.
    while (j < body.length) {
      re.lastIndex = j;
      const f = re.exec(body);
      if (!f) break;
      let k = re.lastIndex;
      let d = 0;
      while (k < body.length && !(d === 0 && body[k] === ';')) {
        if (body[k] === '{' || body[k] === '<') d++;
        else if (body[k] === '}' || body[k] === '>') d--;
        k++;
      }
      fields.set(f[1], body.slice(re.lastIndex, k).replace(/\s+/g, ' ').trim());
      j = k + 1;
    }
    const global = aliases.get(m[1]) || m[1];
    index.set(global, fields);
    if (m[1] !== global && !index.has(m[1])) index.set(m[1], fields);
  }
}

function strictFields(value, type, where, errors) {
  if (value === null || value === undefined) return;
  type = type.trim();
  let m;
  if ((m = /^Array<(.+)>$/.exec(type))) {
    if (Array.isArray(value)) value.forEach((v, i) => strictFields(v, m[1], `${where}[${i}]`, errors));
    return;
  }
  if ((m = /^\{ \[key: string\]: (.+); \}$/.exec(type))) {
    if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) strictFields(v, m[1], `${where}.${k}`, errors);
    }
    return;
  }
  const fields = typeIndex.get(type);
  if (!fields || typeof value !== 'object' || Array.isArray(value)) return; // leaf or alias
  for (const [k, v] of Object.entries(value)) {
    if (!fields.has(k)) {
      errors.push(`${where}: unknown field "${k}"`);
      continue;
    }
    strictFields(v, fields.get(k), `${where}.${k}`, errors);
  }
}

function validateSchema(o) {
  const { obj, file } = o;
  const where = `${file} ${obj.kind}/${obj.metadata && obj.metadata.name}`;
  if (!obj.apiVersion || !obj.kind) {
    report.error(`${file}: apiVersion and kind are required`);
    return;
  }
  const Model = modelFor(obj.apiVersion, obj.kind);
  if (!Model) {
    report.error(`${where}: unknown apiVersion/kind ${obj.apiVersion} ${obj.kind}`);
    return;
  }
  try {
    new Model(JSON.parse(JSON.stringify(obj))).validate();
  } catch (e) {
    const details = (e.errors || []).map((x) => `${x.instancePath || '/'} ${x.message}`).join('; ');
    report.error(`${where}: schema: ${details || e.message}`);
  }
  const iface = `IIoK8sApi${apiGroupPascal(obj.apiVersion)}${obj.kind}`;
  if (!typeIndex.has(iface)) {
    report.error(`${where}: no type declaration ${iface} for the unknown-field check`);
    return;
  }
  const errors = [];
  strictFields(obj, iface, obj.kind, errors);
  for (const e of errors) report.error(`${where}: ${e}`);
}

// apps/v1 -> AppsV1, v1 -> CoreV1, rbac.authorization.k8s.io/v1 -> RbacV1.
function apiGroupPascal(apiVersion) {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['core', apiVersion];
  const first = group.split('.')[0];
  return first.charAt(0).toUpperCase() + first.slice(1) + version.charAt(0).toUpperCase() + version.slice(1);
}

// --------------------------------------------------------------- cross refs
function podSpecOf(obj) {
  if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(obj.kind)) {
    return obj.spec && obj.spec.template && obj.spec.template.spec;
  }
  if (obj.kind === 'Pod') return obj.spec;
  return null;
}

function crossCheck(rootName, objects) {
  const byKey = new Map();
  const named = (kind, name) => objects.find((o) => o.obj.kind === kind && o.obj.metadata.name === name);
  for (const o of objects) {
    const { obj, file } = o;
    const md = obj.metadata || {};
    const where = `${rootName}: ${file} ${obj.kind}/${md.name}`;
    if (!md.name || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(md.name) || md.name.length > 253) {
      report.error(`${where}: metadata.name must be a DNS-1123 name`);
    }
    if (!CLUSTER_SCOPED.has(obj.kind) && md.namespace !== NAMESPACE) {
      report.error(`${where}: namespace ${md.namespace}, expected ${NAMESPACE}`);
    }
    const key = `${obj.kind}/${md.namespace || ''}/${md.name}`;
    if (byKey.has(key)) report.error(`${where}: defined twice (also ${byKey.get(key)})`);
    byKey.set(key, file);
  }

  const workloads = objects.filter((o) => podSpecOf(o.obj));
  for (const { obj, file } of workloads) {
    const where = `${rootName}: ${file} ${obj.kind}/${obj.metadata.name}`;
    const spec = podSpecOf(obj);
    const tmplLabels = (obj.spec.template.metadata && obj.spec.template.metadata.labels) || {};
    const sel = (obj.spec.selector && obj.spec.selector.matchLabels) || {};
    if (Object.keys(sel).length === 0) report.error(`${where}: empty selector`);
    for (const [k, v] of Object.entries(sel)) {
      if (tmplLabels[k] !== v) report.error(`${where}: selector ${k}=${v} does not match the pod template labels`);
    }
    if (obj.kind === 'StatefulSet' && !named('Service', obj.spec.serviceName)) {
      report.error(`${where}: serviceName ${obj.spec.serviceName} is no Service`);
    }
    if (spec.serviceAccountName && !named('ServiceAccount', spec.serviceAccountName)) {
      report.error(`${where}: ServiceAccount ${spec.serviceAccountName} is not defined`);
    }
    // Restricted Pod Security profile.
    const psc = spec.securityContext || {};
    if (psc.runAsNonRoot !== true) report.error(`${where}: pod securityContext.runAsNonRoot must be true`);
    if (!psc.seccompProfile || !['RuntimeDefault', 'Localhost'].includes(psc.seccompProfile.type)) {
      report.error(`${where}: pod seccompProfile must be RuntimeDefault`);
    }
    if (spec.hostNetwork || spec.hostPID || spec.hostIPC) report.error(`${where}: host namespaces are not allowed`);
    const volumes = new Map((spec.volumes || []).map((v) => [v.name, v]));
    const claimTemplates = new Set(((obj.spec.volumeClaimTemplates) || []).map((c) => c.metadata.name));
    for (const v of volumes.values()) {
      if (v.hostPath) report.error(`${where}: hostPath volume ${v.name} is not allowed`);
      if (v.configMap && !named('ConfigMap', v.configMap.name) && !v.configMap.optional) {
        report.error(`${where}: volume ${v.name}: ConfigMap ${v.configMap.name} is not defined`);
      }
      if (v.configMap && v.configMap.items) {
        const cm = named('ConfigMap', v.configMap.name);
        for (const it of v.configMap.items) {
          if (cm && !(it.key in (cm.obj.data || {}))) report.error(`${where}: ConfigMap ${v.configMap.name} has no key ${it.key}`);
        }
      }
      if (v.persistentVolumeClaim && !named('PersistentVolumeClaim', v.persistentVolumeClaim.claimName)) {
        report.error(`${where}: volume ${v.name}: PersistentVolumeClaim ${v.persistentVolumeClaim.claimName} is not defined`);
      }
      if (v.secret) checkSecretRef(where, v.secret.secretName, null, v.secret.optional);
    }
    const allPorts = new Map();
    const containers = (spec.initContainers || []).concat(spec.containers || []);
    const cnames = new Set();
    for (const c of containers) {
      const cw = `${where} container ${c.name}`;
      if (cnames.has(c.name)) report.error(`${cw}: duplicate container name`);
      cnames.add(c.name);
      if (!c.image) report.error(`${cw}: no image`);
      const csc = c.securityContext || {};
      if (csc.allowPrivilegeEscalation !== false) report.error(`${cw}: allowPrivilegeEscalation must be false`);
      if (csc.privileged) report.error(`${cw}: privileged is not allowed`);
      const drop = (csc.capabilities && csc.capabilities.drop) || [];
      if (!drop.includes('ALL')) report.error(`${cw}: capabilities must drop ALL`);
      if (!c.resources || !c.resources.requests || !c.resources.limits) report.error(`${cw}: set resource requests and limits`);
      const ports = new Map();
      for (const p of c.ports || []) {
        if (p.name) {
          if (p.name.length > 15) report.error(`${cw}: port name ${p.name} is longer than 15 characters`);
          ports.set(p.name, p.containerPort);
          allPorts.set(p.name, p.containerPort);
        }
        allPorts.set(String(p.containerPort), p.containerPort);
      }
      for (const probeName of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
        const probe = c[probeName];
        if (!probe) {
          if (probeName !== 'startupProbe' && (spec.containers || []).includes(c)) report.error(`${cw}: no ${probeName}`);
          continue;
        }
        const action = probe.httpGet || probe.tcpSocket || probe.grpc;
        if (action && action.port !== undefined) {
          const ok = typeof action.port === 'number'
            ? [...ports.values()].includes(action.port) : ports.has(action.port);
          if (!ok) report.error(`${cw}: ${probeName} port ${action.port} is not a container port`);
        }
      }
      for (const m of c.volumeMounts || []) {
        if (!volumes.has(m.name) && !claimTemplates.has(m.name)) report.error(`${cw}: volumeMount ${m.name} has no volume`);
      }
      const envNames = new Set();
      for (const e of c.env || []) {
        if (envNames.has(e.name)) report.error(`${cw}: env ${e.name} set twice`);
        envNames.add(e.name);
        const vf = e.valueFrom || {};
        if (vf.secretKeyRef) checkSecretRef(cw, vf.secretKeyRef.name, vf.secretKeyRef.key, vf.secretKeyRef.optional);
        if (vf.configMapKeyRef) {
          const cm = named('ConfigMap', vf.configMapKeyRef.name);
          if (!cm && !vf.configMapKeyRef.optional) report.error(`${cw}: ConfigMap ${vf.configMapKeyRef.name} is not defined`);
          else if (cm && !((vf.configMapKeyRef.key) in (cm.obj.data || {}))) report.error(`${cw}: ConfigMap ${vf.configMapKeyRef.name} has no key ${vf.configMapKeyRef.key}`);
        }
        if (e.value !== undefined && /(password|secret|token)/i.test(e.name)) {
          report.error(`${cw}: env ${e.name} holds a literal secret; use a secretKeyRef`);
        }
      }
      // $(VAR) references in args/command must be defined env vars.
      for (const a of (c.args || []).concat(c.command || [])) {
        for (const m of String(a).matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
          if (!envNames.has(m[1])) report.error(`${cw}: argument ${a} uses $(${m[1]}), which is not in env`);
        }
        // The binaries refuse --token in any form (issue 15: secrets never in argv).
        if (/^--token(=|$)/.test(a) || /--db=.*\S/.test(a) || /password=/i.test(a) ||
            /postgres(ql)?:\/\/[^/@]*:[^/@]*@/i.test(a)) report.error(`${cw}: argument ${a} carries a secret`);
      }
    }
    const ann = (obj.spec.template.metadata && obj.spec.template.metadata.annotations) || {};
    if (ann['prometheus.io/scrape'] === 'true') {
      const port = ann['prometheus.io/port'];
      if (!port || !allPorts.has(port)) report.error(`${where}: prometheus.io/port ${port} is not a container port`);
      if (!tmplLabels['app.kubernetes.io/component']) report.error(`${where}: scraped pods need app.kubernetes.io/component (the Prometheus job)`);
    }
  }

  for (const { obj, file } of objects.filter((o) => o.obj.kind === 'Service')) {
    const where = `${rootName}: ${file} Service/${obj.metadata.name}`;
    if (obj.spec.type === 'ExternalName') continue;
    const sel = obj.spec.selector || {};
    const pods = workloads.filter((w) => {
      const l = w.obj.spec.template.metadata.labels || {};
      return Object.keys(sel).length && Object.entries(sel).every(([k, v]) => l[k] === v);
    });
    if (pods.length === 0) {
      report.error(`${where}: selector matches no pod template`);
      continue;
    }
    for (const p of obj.spec.ports || []) {
      const target = p.targetPort === undefined ? p.port : p.targetPort;
      for (const w of pods) {
        const ports = [];
        for (const c of podSpecOf(w.obj).containers) for (const cp of c.ports || []) ports.push(cp);
        const ok = typeof target === 'number' ? ports.some((cp) => cp.containerPort === target) : ports.some((cp) => cp.name === target);
        if (!ok) report.error(`${where}: targetPort ${target} is not a port of ${w.obj.kind}/${w.obj.metadata.name}`);
      }
    }
  }

  for (const { obj, file } of objects.filter((o) => o.obj.kind === 'RoleBinding')) {
    const where = `${rootName}: ${file} RoleBinding/${obj.metadata.name}`;
    if (obj.roleRef.kind === 'Role' && !named('Role', obj.roleRef.name)) report.error(`${where}: Role ${obj.roleRef.name} is not defined`);
    for (const s of obj.subjects || []) {
      if (s.kind === 'ServiceAccount' && !named('ServiceAccount', s.name)) report.error(`${where}: ServiceAccount ${s.name} is not defined`);
    }
  }

  for (const { obj, file } of objects.filter((o) => o.obj.kind === 'ConfigMap')) {
    const where = `${rootName}: ${file} ConfigMap/${obj.metadata.name}`;
    const size = Buffer.byteLength(JSON.stringify(obj));
    if (size > 1024 * 1024) report.error(`${where}: ${size} bytes, over the 1 MiB object limit`);
    if (size > 262144) report.error(`${where}: ${size} bytes, over the 256 KiB limit of kubectl apply's last-applied annotation`);
  }

  // What deploy/README.md promises about this deployment.
  const learner = named('StatefulSet', 'learner');
  const actor = named('Deployment', 'actor');
  const coordinator = named('Deployment', 'coordinator');
  if (!learner || !actor || !coordinator) {
    report.error(`${rootName}: expected Deployments coordinator and actor and StatefulSet learner`);
  } else {
    // TLS and the token everywhere: servers with certificate, key and CA
    // (mutual TLS), actors with the CA and a client certificate; the token
    // from Secret ristretto-token.
    const flags = {
      coordinator: ['--tls-cert=', '--tls-key=', '--tls-ca='],
      learner: ['--tls-cert=', '--tls-key=', '--tls-ca=', '--advertise=$(POD_NAME).learner.'],
      actor: ['--tls-ca=', '--tls-cert=', '--tls-key='],
    };
    for (const [name, w] of [['coordinator', coordinator], ['learner', learner], ['actor', actor]]) {
      const c = podSpecOf(w.obj).containers[0];
      const args = (c.args || []).map(String);
      for (const f of flags[name]) {
        if (!args.some((a) => a.startsWith(f))) report.error(`${rootName}: ${name} has no ${f}... argument`);
      }
      // Each pod holds its role's token: actors the actors' token,
      // learners the learners' token, the coordinator the cluster token
      // (the operators') and the other two, which it checks.
      const fromSecret = (variable, secret) => {
        const e = (c.env || []).find((x) => x.name === variable);
        if (!e || !e.valueFrom || !e.valueFrom.secretKeyRef || e.valueFrom.secretKeyRef.name !== secret) {
          report.error(`${rootName}: ${name} does not read ${variable} from Secret ${secret}`);
        }
      };
      fromSecret('RISTRETTO_TOKEN', { actor: 'ristretto-actor-token', learner: 'ristretto-learner-token' }[name] || 'ristretto-token');
      if (name === 'coordinator') {
        fromSecret('RISTRETTO_ACTOR_TOKEN', 'ristretto-actor-token');
        fromSecret('RISTRETTO_LEARNER_TOKEN', 'ristretto-learner-token');
      }
      if (!(podSpecOf(w.obj).initContainers || []).some((i) => (i.args || []).includes('ristretto-install-tls'))) {
        report.error(`${rootName}: ${name} has no init container installing the TLS files (ristretto-install-tls)`);
      }
    }
    // A token Secret reaches only the pods of its roles (and the
    // coordinator): a compromised learner or actor pod holds no other
    // role's token.
    const MAY_MOUNT = {
      'ristretto-token': ['coordinator'],
      'ristretto-learner-token': ['coordinator', 'learner'],
      'ristretto-actor-token': ['coordinator', 'actor'],
    };
    const roles = new Map([[coordinator, 'coordinator'], [learner, 'learner'], [actor, 'actor']]);
    for (const doc of objects) {
      const spec = podSpecOf(doc.obj);
      if (!spec) continue;
      const role = roles.get(doc);
      for (const secret of secretNamesIn(spec)) {
        const allowed = MAY_MOUNT[secret];
        if (allowed && !allowed.includes(role)) {
          report.error(`${rootName}: ${doc.obj.kind} ${doc.obj.metadata.name} reads Secret ${secret} (only ${allowed.join(', ')} may)`);
        }
      }
    }
    const headless = named('Service', 'learner');
    if (learner.obj.spec.serviceName !== 'learner' || !headless || headless.obj.spec.clusterIP !== 'None') {
      report.error(`${rootName}: the learner StatefulSet needs the headless Service learner (its pods' DNS names)`);
    }
    const ls = podSpecOf(learner.obj);
    const limits = (ls.containers[0].resources && ls.containers[0].resources.limits) || {};
    if (!limits['nvidia.com/gpu']) report.error(`${rootName}: the learner has no nvidia.com/gpu limit`);
    if (!ls.nodeSelector || !Object.keys(ls.nodeSelector).some((k) => k.startsWith('nvidia.com/'))) {
      report.error(`${rootName}: the learner has no GPU nodeSelector`);
    }
    if (!(ls.tolerations || []).some((t) => t.key === 'nvidia.com/gpu')) report.error(`${rootName}: the learner does not tolerate GPU taints`);
    const as = podSpecOf(actor.obj);
    if (!Number.isInteger(actor.obj.spec.replicas) || actor.obj.spec.replicas < 1) report.error(`${rootName}: actors need replicas >= 1`);
    if (as.containers.some((c) => c.resources && c.resources.limits && c.resources.limits['nvidia.com/gpu'])) {
      report.error(`${rootName}: actors must not ask for GPUs`);
    }
    if (coordinator.obj.spec.replicas !== 1) report.error(`${rootName}: exactly one coordinator`);
  }
  if (!named('Service', 'postgres')) report.error(`${rootName}: no Service postgres (in-cluster StatefulSet or ExternalName)`);
}

function checkSecretRef(where, name, key, optional) {
  const keys = EXTERNAL_SECRETS[name];
  if (!keys) {
    report.error(`${where}: Secret ${name} is not one of the documented Secrets (${Object.keys(EXTERNAL_SECRETS).join(', ')})`);
  } else if (key && !keys.has(key)) {
    report.error(`${where}: Secret ${name} has no documented key ${key}`);
  }
  // Every ristretto process presents the cluster token and uses TLS: a
  // missing Secret must stop the pod, not start it unauthenticated.
  if (['ristretto-token', 'ristretto-actor-token', 'ristretto-learner-token', 'ristretto-tls'].includes(name) && optional) report.error(`${where}: ${name} must not be optional`);
}

// Every Secret a pod spec names: env (secretKeyRef), envFrom (secretRef)
// and volumes (secret.secretName, projected sources).
function secretNamesIn(value, out = new Set()) {
  if (Array.isArray(value)) {
    for (const v of value) secretNamesIn(v, out);
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if ((k === 'secretKeyRef' || k === 'secretRef' || k === 'secret') && v && typeof v === 'object') {
        if (typeof v.name === 'string') out.add(v.name);
        if (typeof v.secretName === 'string') out.add(v.secretName);
      }
      secretNamesIn(v, out);
    }
  }
  return out;
}

// --------------------------------------------------------------------- main
typeIndex = loadTypeIndex();
const DEFAULT_ROOTS = ['deploy/k8s', 'deploy/k8s/external-db'];
const roots = process.argv.slice(2).length ? process.argv.slice(2) : DEFAULT_ROOTS;
let count = 0;
for (const root of roots) {
  let objects;
  try {
    objects = resolveKustomization(root);
  } catch (e) {
    report.error(`${root}: ${e.message}`);
    continue;
  }
  objects.forEach(validateSchema);
  crossCheck(root, objects);
  count += objects.length;
  const kinds = {};
  for (const o of objects) kinds[o.obj.kind] = (kinds[o.obj.kind] || 0) + 1;
  report.note(`${root}: ${objects.length} objects (${Object.entries(kinds).map(([k, v]) => `${v} ${k}`).join(', ')})`);
}
// Manifests not reachable from any kustomization are a mistake.
const reached = new Set();
for (const root of roots) {
  const walk = (dir) => {
    const k = lib.loadYaml(path.join(dir, 'kustomization.yaml'));
    for (const r of k.resources || []) {
      const t = path.resolve(dir, r);
      if (fs.existsSync(t) && fs.statSync(t).isDirectory()) walk(t);
      else reached.add(t);
    }
  };
  try {
    walk(path.resolve(lib.ROOT, root));
  } catch (e) { /* reported above */ }
}
const allYaml = [];
const collect = (dir) => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) collect(p);
    else if (/\.ya?ml$/.test(e.name) && e.name !== 'kustomization.yaml') allYaml.push(p);
  }
};
if (roots === DEFAULT_ROOTS) {
  collect(path.resolve(lib.ROOT, 'deploy/k8s'));
  for (const f of allYaml) if (!reached.has(f)) report.error(`${lib.rel(f)} is in no kustomization`);
}

report.finish(`${count} objects in ${roots.length} kustomizations, schemas of kubernetes-models ${require('kubernetes-models/package.json').version}`);
