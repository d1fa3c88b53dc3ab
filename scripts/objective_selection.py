#!/usr/bin/env python3
"""Which trial each study objective would choose, and how that trial did on
the lockbox (issue 34, item 6; docs/env_actions.md, "Which objective
selects trials that hold up").

Every complete trial of a study has its fold metrics (fold_metrics) and its
own lockbox result (lockbox_results) in the study's database. This script
re-ranks the complete trials under each candidate objective, prints the
trial each would choose with its lockbox Sharpe, the Spearman correlation
of each objective with the lockbox over the complete trials, and (with two
or more folds) the pick chosen on every fold but the last with its
last-fold Sharpe over buy & hold's.

Usage (as root, like `ristretto up`): scripts/objective_selection.py DIR...
where each DIR holds data/ of a finished `ristretto up --data-dir DIR/data`;
its PostgreSQL is started for the query (as the postgres user) and stopped.
Prints one JSON object per DIR."""
import json, math, os, subprocess, sys, statistics

PGBIN = '/usr/lib/postgresql/15/bin'

def query(pgdir, sql, port):
    out = subprocess.run(['runuser', '-u', 'postgres', '--', PGBIN + '/psql', '-h', pgdir, '-p', str(port),
                          '-d', 'ristretto', '-At', '-F', '\t', '-c', sql], capture_output=True, text=True, check=True)
    return [l.split('\t') for l in out.stdout.strip().split('\n') if l]

def objective(name, folds):
    s = [f['sharpe'] for f in folds]; b = [f['bh'] for f in folds]
    n = len(s)
    if name == 'sharpe': return sum(s) / n
    if name == 'sortino': return sum(f['sortino'] for f in folds) / n
    if name == 'calmar': return sum(f['calmar'] for f in folds) / n
    if name == 'return': return sum(f['ret'] for f in folds) / n
    if name == 'excess_sharpe':
        m = sum(s) / n
        return sum(x - y for x, y in zip(s, b)) / n - 0.1 * math.sqrt(sum((x - m) ** 2 for x in s) / n)
    if name == 'min_excess': return min(x - y for x, y in zip(s, b))
    if name == 'median_excess': return statistics.median([x - y for x, y in zip(s, b)])
    if name == 'excess_lcb':
        d = [x - y for x, y in zip(s, b)]; m = sum(d) / n
        return m - (math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1)) / math.sqrt(n) if n > 1 else 0)
    raise ValueError(name)

OBJ = ['sharpe', 'excess_sharpe', 'sortino', 'calmar', 'return', 'min_excess', 'median_excess', 'excess_lcb']

def analyze(d, port):
    pgdir = os.path.abspath(os.path.join(d, 'data', 'pg'))
    subprocess.run(['runuser', '-u', 'postgres', '--', PGBIN + '/pg_ctl', 'start', '-w', '-D', pgdir, '-l', '/tmp/analyze-pg.log',
                    '-o', f"-k {pgdir} -p {port} -h ''"], check=True, capture_output=True)
    try:
        rows = query(pgdir, "SELECT t.number, t.state, f.fold, f.sharpe, f.benchmark_sharpe, f.sortino, f.calmar, f.total_return "
                            "FROM fold_metrics f JOIN trials t ON t.id = f.trial_id WHERE f.fold >= 0 ORDER BY 1, 3", port)
        lock = query(pgdir, "SELECT t.number, l.sharpe, l.sharpe_se FROM lockbox_results l JOIN trials t ON t.id = l.trial_id", port)
    finally:
        subprocess.run(['runuser', '-u', 'postgres', '--', PGBIN + '/pg_ctl', 'stop', '-w', '-m', 'fast', '-D', pgdir], capture_output=True)
    trials = {}
    for num, state, fold, s, b, so, ca, r in rows:
        trials.setdefault(int(num), {'state': state, 'folds': {}})['folds'][int(fold)] = dict(
            sharpe=float(s), bh=float(b), sortino=float(so), calmar=float(ca), ret=float(r))
    k = max(len(t['folds']) for t in trials.values())
    full = {n: [t['folds'][f] for f in sorted(t['folds'])] for n, t in trials.items() if len(t['folds']) == k and t['state'] == 'complete'}
    res = {'dir': os.path.basename(d), 'folds': k, 'complete': len(full), 'lockbox': lock}
    picks = {}; wf = {}
    for o in OBJ:
        picks[o] = max(sorted(full), key=lambda n: objective(o, full[n])) if full else None
        if k >= 2 and full:
            p = max(sorted(full), key=lambda n: objective(o, full[n][:-1]))
            last = full[p][-1]
            wf[o] = (p, round(last['sharpe'] - last['bh'], 3))
    lb = {int(n): float(sh) for n, sh, se in lock}
    res['picks'] = {o: (p, round(lb.get(p, float('nan')), 2)) for o, p in picks.items()}
    res['last_fold_excess_of_pick_chosen_on_earlier_folds'] = wf
    both = [n for n in full if n in lb]
    res['lockbox_of_complete'] = {n: round(lb[n], 2) for n in sorted(both)}
    def rank(v):
        order = sorted(range(len(v)), key=lambda i: v[i]); r = [0] * len(v)
        for k, i in enumerate(order): r[i] = k
        return r
    def spearman(x, y):
        if len(x) < 3: return float('nan')
        rx, ry = rank(x), rank(y); n = len(x)
        return 1 - 6 * sum((a - b) ** 2 for a, b in zip(rx, ry)) / (n * (n * n - 1))
    res['spearman_vs_lockbox'] = {o: round(spearman([objective(o, full[n]) for n in both], [lb[n] for n in both]), 2) for o in OBJ}
    return res

if __name__ == '__main__':
    for i, d in enumerate(sys.argv[1:]):
        print(json.dumps(analyze(d, 5990 + i)))
