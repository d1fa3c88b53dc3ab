#!/usr/bin/env python3
"""Keys of scripts/lint.sh's clang-tidy result cache (.ci/lint-clean).

  lint_cache.py keys --build DIR [--tidy-arg=ARG]... FILE...
      prints 'KEY PATH' per FILE ('- PATH': no key, lint it);
  lint_cache.py update CACHE [--prune] < 'KEY PATH' lines
      adds the lines to CACHE (with --prune: CACHE becomes exactly them).

A translation unit's key is the SHA-256 of everything that decides what
clang-tidy says about it: the toolchain (clang-tidy --version, the system
include directories clang picks, the contents of clang's own resource
headers), the flags lint.sh passes, every .clang-tidy that applies, the
TU's compile commands from compile_commands.json (output dropped), and the
content of the TU and of every file it includes, system headers included,
as the build's own dependency records list them (ninja -t deps). That is
exactly what ninja uses to decide a rebuild. The repository root and the
build directory are replaced by placeholders, so a clone at another path
computes the same keys. A TU gets no key unless ninja would not rebuild
its object (deps record present and valid, no input newer than the object,
same command as the one logged in .ninja_log), since only then do the
records list what the TU includes now.

The remaining gap: the records come from g++, so a header that only clang
would include (under `#ifdef __clang__` or `__has_include`) is not in the
key unless g++ includes it too; neither is a newly created file that would
shadow an included one in an earlier include directory (ninja has the same
blind spot).
"""
import argparse
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

_digests = {}


def file_digest(path):
  """SHA-256 of a file's contents (memoised: TUs share most headers)."""
  if path not in _digests:
    h = hashlib.sha256()
    with open(path, 'rb') as f:
      for chunk in iter(lambda: f.read(1 << 20), b''):
        h.update(chunk)
    _digests[path] = h.hexdigest()
  return _digests[path]


def ninja_hash(command):
  """MurmurHash64A, as ninja logs a command's hash in .ninja_log."""
  m, mask, r = 0xc6a4a7935bd1e995, (1 << 64) - 1, 47
  data = command.encode()
  h = (0xDECAFBADDECAFBAD ^ (len(data) * m)) & mask
  whole = len(data) // 8 * 8
  for i in range(0, whole, 8):
    k = (int.from_bytes(data[i:i + 8], 'little') * m) & mask
    k = ((k ^ (k >> r)) * m) & mask
    h = ((h ^ k) * m) & mask
  tail = data[whole:]
  if tail:
    h ^= int.from_bytes(tail, 'little')
    h = (h * m) & mask
  h = ((h ^ (h >> r)) * m) & mask
  return h ^ (h >> r)


class Normaliser:
  """Replaces the build directory and the repository root by placeholders."""

  def __init__(self, root, build):
    pairs = sorted([(build, '@BUILD@'), (root, '@ROOT@')],
                   key=lambda p: -len(p[0]))
    self._subs = [(re.compile(re.escape(d) + r'(?=/|$|\s|")'), p)
                  for d, p in pairs]

  def __call__(self, text):
    for pattern, placeholder in self._subs:
      text = pattern.sub(placeholder, text)
    return text


def run(args):
  return subprocess.run(args, check=True, capture_output=True,
                        text=True).stdout


def toolchain_lines(norm):
  """clang-tidy's version, clang's system include directories, and the
  contents of its resource headers (which g++'s records never list)."""
  # Without the 'Host CPU' line: it names the machine, not the analysis.
  lines = ['version ' + l.strip()
           for l in run(['clang-tidy', '--version']).splitlines()
           if l.strip() and not l.strip().startswith('Host CPU')]
  with tempfile.TemporaryDirectory() as probe_dir:
    probe = os.path.join(probe_dir, 'probe.cc')
    with open(probe, 'w') as f:
      f.write('\n')
    out = subprocess.run(['clang-tidy', '--checks=-*,misc-unused-using-decls',
                          probe, '--', '-xc++', '-std=c++17', '-v'],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
  in_list = False
  for line in out.splitlines():
    if line.startswith('#include <...> search starts here'):
      in_list = True
    elif line.startswith('End of search list'):
      in_list = False
    elif in_list or line.startswith('Selected GCC installation'):
      lines.append('system ' + norm(line.strip()))
      d = line.strip()
      if in_list and '/lib/clang/' in d and os.path.isdir(d):
        for dirpath, _, names in sorted(os.walk(d)):
          for name in sorted(names):
            p = os.path.join(dirpath, name)
            lines.append('resource %s %s' % (os.path.relpath(p, d),
                                             file_digest(p)))
  if not any(l.startswith('system ') for l in lines):
    sys.exit('lint_cache.py: could not read clang\'s include directories')
  return lines


def read_deps(build):
  """{object: (deps mtime ns, [paths])} from `ninja -t deps`, VALID only."""
  deps, current = {}, None
  if not os.path.isfile(os.path.join(build, 'build.ninja')):
    return deps  # not a Ninja build: no records, no keys
  for line in run(['ninja', '-C', build, '-t', 'deps']).splitlines():
    if line.startswith('    '):
      if current is not None:
        current[1].append(line.strip())
    elif line.strip():
      match = re.match(r'(.*): #deps \d+, deps mtime (\d+) \((\w+)\)$', line)
      current = None
      if match and match.group(3) == 'VALID':
        current = (int(match.group(2)), [])
        deps[match.group(1)] = current
  return deps


def read_log(build):
  """{output: command hash} from .ninja_log (the latest entry wins)."""
  hashes = {}
  try:
    with open(os.path.join(build, '.ninja_log')) as f:
      for line in f:
        fields = line.rstrip('\n').split('\t')
        if len(fields) == 5:
          hashes[fields[3]] = int(fields[4], 16)
  except FileNotFoundError:
    pass
  return hashes


def current_commands(build, objects):
  """{object: command} as ninja would run it now (from build.ninja)."""
  commands = {}
  if not objects:
    return commands
  out = subprocess.run(['ninja', '-C', build, '-t', 'commands', '-s'] +
                       sorted(objects), capture_output=True, text=True).stdout
  for line in out.splitlines():
    try:
      words = shlex.split(line)
    except ValueError:
      continue
    if '-o' in words[:-1]:
      commands[words[words.index('-o') + 1]] = line
  return commands


def object_of(words):
  return words[words.index('-o') + 1] if '-o' in words[:-1] else None


def tidy_configs(path, norm):
  """Every .clang-tidy clang-tidy may read for PATH (its directory up)."""
  lines, d = [], os.path.dirname(path)
  while True:
    config = os.path.join(d, '.clang-tidy')
    if os.path.isfile(config):
      lines.append('config %s %s' % (norm(config), file_digest(config)))
    if d == os.path.dirname(d):
      return lines
    d = os.path.dirname(d)


def keys(args):
  root = os.path.realpath(os.getcwd())
  build = os.path.realpath(args.build)
  norm = Normaliser(root, build)
  try:
    with open(os.path.join(build, 'compile_commands.json')) as f:
      database = json.load(f)
  except FileNotFoundError:
    sys.exit('lint_cache.py: no %s/compile_commands.json (build first: '
             'scripts/build.sh)' % args.build)
  entries = {}
  for entry in database:
    path = os.path.realpath(os.path.join(entry['directory'], entry['file']))
    words = (entry['arguments'] if 'arguments' in entry else
             shlex.split(entry['command']))
    entries.setdefault(path, []).append((entry['directory'], words))
  wanted = {os.path.realpath(f): os.path.relpath(os.path.realpath(f), root)
            for f in args.files}
  objects = {}
  for path in wanted:
    for directory, words in entries.get(path, []):
      obj = object_of(words)
      if obj is not None:
        objects[obj] = os.path.realpath(os.path.join(directory, obj))
  deps, log = read_deps(build), read_log(build)
  commands = current_commands(build, [o for o in objects if o in deps])
  common = toolchain_lines(norm) + ['tidy-arg ' + a for a in args.tidy_arg]
  for path, name in wanted.items():
    print('%s %s' % (key_of(path, entries.get(path), objects, deps, log,
                            commands, common, norm) or '-', name))


def key_of(path, entries, objects, deps, log, commands, common, norm):
  """The TU's key, or None when its dependency records may be out of date."""
  if not entries:
    return None
  lines = common + tidy_configs(path, norm)
  files = set()
  for directory, words in entries:
    obj = object_of(words)
    if obj not in deps or obj not in commands or obj not in log:
      return None
    if ninja_hash(commands[obj]) != log[obj]:
      return None  # the command changed since the object was built
    try:
      built = os.stat(objects[obj]).st_mtime_ns
      record_mtime, inputs = deps[obj]
      if built > record_mtime:
        return None  # rebuilt without a deps record
      for dep in inputs:
        if os.stat(os.path.join(directory, dep)).st_mtime_ns > built:
          return None  # edited since the build: ninja would rebuild
        files.add(os.path.realpath(os.path.join(directory, dep)))
    except FileNotFoundError:
      return None
    i = words.index('-o')
    command = words[:i] + words[i + 2:]
    lines.append('command %s %s' % (norm(directory),
                                    norm(shlex.join(command))))
  if path not in files:
    return None
  try:
    lines += sorted('file %s %s' % (norm(f), file_digest(f)) for f in files)
  except FileNotFoundError:
    return None
  text = '\n'.join(common + sorted(lines[len(common):]))
  return hashlib.sha256(text.encode()).hexdigest()


def update(args):
  new = {}
  for line in sys.stdin:
    fields = line.split(None, 1)
    if len(fields) == 2 and fields[0] != '-':
      new[fields[1].strip()] = fields[0]
  entries = {}
  if not args.prune and os.path.exists(args.cache):
    with open(args.cache) as f:
      for line in f:
        fields = line.split(None, 1)
        if len(fields) == 2:
          entries[fields[1].strip()] = fields[0]
  entries.update(new)  # one key per file: a file's newer key replaces its old
  os.makedirs(os.path.dirname(args.cache) or '.', exist_ok=True)
  with open(args.cache + '.tmp', 'w') as f:
    for path, key in sorted(entries.items()):
      f.write('%s %s\n' % (key, path))
  os.replace(args.cache + '.tmp', args.cache)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  sub = parser.add_subparsers(dest='command', required=True)
  k = sub.add_parser('keys')
  k.add_argument('--build', required=True)
  k.add_argument('--tidy-arg', action='append', default=[])
  k.add_argument('files', nargs='*')
  u = sub.add_parser('update')
  u.add_argument('cache')
  u.add_argument('--prune', action='store_true')
  args = parser.parse_args()
  keys(args) if args.command == 'keys' else update(args)


if __name__ == '__main__':
  main()
