// A small PromQL lexer: enough to find the metric names, label matchers and
// grouping labels an expression uses, so they can be checked against
// docs/metrics.md. Syntax itself is checked by promtool (check_deploy.sh).
'use strict';

const AGGREGATORS = new Set([
  'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values',
  'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio',
]);
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['bool', 'and', 'or', 'unless', 'offset', 'atan2', 'inf', 'nan', 'Inf', 'NaN']);

// Grafana's built-in interval variables and what deploy/promql.txt uses
// instead (Prometheus scrapes every 5 s, so 1m holds 12 samples).
const GRAFANA_INTERVALS = { __rate_interval: '1m', __interval: '1m', __range: '1h' };

// Replaces Grafana variables: built-in intervals by fixed durations, and
// template variables (used only as `label=~"$var"`) by `.*`. Returns
// {expr, errors}.
function substituteGrafana(expr, templateVars) {
  const errors = [];
  const out = expr.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}?/g, (whole, name, offset) => {
    if (Object.prototype.hasOwnProperty.call(GRAFANA_INTERVALS, name)) return GRAFANA_INTERVALS[name];
    if (templateVars.has(name)) {
      const before = expr.slice(0, offset);
      if (!/[=!]~\s*"$/.test(before)) {
        errors.push(`template variable $${name} is used outside a regex matcher (label=~"$${name}")`);
      }
      return '.*';
    }
    errors.push(`unknown variable ${whole}`);
    return whole;
  });
  return { expr: out, errors };
}

// Returns {selectors: [{metric, matchers: [{label, op, value}]}],
//          groupings: [label], errors: [string]}.
function analyze(expr) {
  const selectors = [];
  const groupings = [];
  const errors = [];
  let i = 0;
  const n = expr.length;
  let last = null; // last significant token: {kind, value}

  const skipSpace = () => {
    while (i < n && /\s/.test(expr[i])) i++;
  };
  const readString = () => {
    const q = expr[i];
    let j = i + 1;
    let value = '';
    while (j < n && expr[j] !== q) {
      if (expr[j] === '\\' && q !== '`') {
        value += expr[j + 1];
        j += 2;
      } else {
        value += expr[j++];
      }
    }
    if (j >= n) errors.push(`unterminated string at ${i}`);
    i = j + 1;
    return value;
  };
  const peekChar = () => {
    let j = i;
    while (j < n && /\s/.test(expr[j])) j++;
    return expr[j];
  };
  const readIdent = () => {
    const m = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(expr.slice(i));
    i += m[0].length;
    return m[0];
  };
  const readLabelList = () => {
    skipSpace();
    if (expr[i] !== '(') {
      errors.push(`expected a label list at ${i}`);
      return;
    }
    const close = expr.indexOf(')', i);
    if (close < 0) {
      errors.push('unterminated label list');
      i = n;
      return;
    }
    for (const l of expr.slice(i + 1, close).split(',')) {
      const label = l.trim();
      if (label) groupings.push(label);
    }
    i = close + 1;
  };
  const readMatchers = (selector) => {
    i++; // {
    for (;;) {
      skipSpace();
      if (i >= n) {
        errors.push('unterminated label matcher block');
        return;
      }
      if (expr[i] === '}') {
        i++;
        return;
      }
      if (expr[i] === ',') {
        i++;
        continue;
      }
      if (!/[a-zA-Z_]/.test(expr[i])) {
        errors.push(`unexpected '${expr[i]}' in label matchers`);
        i++;
        continue;
      }
      const label = readIdent();
      skipSpace();
      const op = /^(=~|!~|!=|=)/.exec(expr.slice(i));
      if (!op) {
        errors.push(`label ${label} has no matcher operator`);
        return;
      }
      i += op[0].length;
      skipSpace();
      if (!`"'\``.includes(expr[i])) {
        errors.push(`label ${label} is not matched against a string`);
        return;
      }
      const value = readString();
      if (selector) selector.matchers.push({ label, op: op[0], value });
    }
  };

  while (i < n) {
    skipSpace();
    if (i >= n) break;
    const c = expr[i];
    if (`"'\``.includes(c)) {
      readString();
      last = { kind: 'string' };
    } else if (c === '{') {
      if (last && last.kind === 'metric') {
        readMatchers(last.selector);
      } else {
        errors.push('a label matcher block without a metric name (name every metric)');
        readMatchers(null);
      }
      last = { kind: 'selector' };
    } else if (c === '[') {
      const close = expr.indexOf(']', i);
      if (close < 0) {
        errors.push('unterminated range');
        break;
      }
      i = close + 1;
      last = { kind: 'range' };
    } else if (/[0-9.]/.test(c)) {
      const m = /^(0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?(?:[smhdwy]|ms)?)+/.exec(expr.slice(i));
      i += m ? m[0].length : 1;
      last = { kind: 'number' };
    } else if (/[a-zA-Z_:]/.test(c)) {
      const word = readIdent();
      if (LABEL_LIST_KEYWORDS.has(word)) {
        readLabelList();
        last = { kind: 'keyword' };
      } else if (KEYWORDS.has(word)) {
        last = { kind: 'keyword' };
      } else if (peekChar() === '(' || (AGGREGATORS.has(word) && /^\s*(by|without)\b/.test(expr.slice(i)))) {
        last = { kind: 'function', value: word };
      } else {
        const selector = { metric: word, matchers: [] };
        selectors.push(selector);
        last = { kind: 'metric', selector };
      }
    } else {
      i++;
      last = { kind: 'op', value: c };
    }
  }
  return { selectors, groupings, errors };
}

module.exports = { analyze, substituteGrafana, GRAFANA_INTERVALS };
