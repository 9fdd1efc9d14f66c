#!/usr/bin/env python3
"""Golden-transcript replay harness for kizunasync (python3, stdlib only).

  replay.py check --corpus DIR [--cases DIR]
      structural check of the corpus (and of our own cases directory)
  replay.py gen   --corpus DIR --out DIR [--cases DIR]
      one pgTAP script per case (run by pg_prove in database kz_replay), one
      isolation spec per case with a held-open transaction (isolationtester)
  replay.py run   --corpus DIR --out DIR [--results FILE] [--cases DIR] [--only ID]
      build the replay database, generate, replay every case, classify it,
      compare with the pins and append "replay P F S" to the results file
  replay.py pin   --update [--out DIR]
      rewrite the pin files from the last run (keeping the reasons of pins
      whose outcome did not change)

Connection: PGHOST/PGPORT/PGUSER from the environment; binaries from
$PG_CONFIG --bindir when PG_CONFIG is set.  See test/replay/README.md and
decisions/0050-replay-harness.md.
"""

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
REPLAY_DIR = os.path.join(ROOT, 'test', 'replay')
DB = 'kz_replay'
OUTCOMES = ('PASS-BYTE', 'PASS-SEMANTIC', 'DIVERGED', 'UNSUPPORTED', 'SKIP')
TOP_KEYS = ('case', 'cites', 'context', 'fencing', 'postconditions', 'priority',
            'status', 'steps', 'title')
STEP_KINDS = ('rpc', 'fault', 'server', 'local', 'assert')
# SQL types of the rpc arguments (the request's top-level keys).
ARG_TYPES = {
    'pull': {'buckets': 'jsonb', 'cursor': 'text', 'schema_version': 'integer',
             'limit': 'integer', 'client_id': 'uuid'},
    'push': {'batch': 'jsonb', 'last_mutation_id': 'uuid', 'schema_version': 'integer',
             'client_id': 'uuid'},
}
# Column details the fixture relies on beyond the types of fixtures/domain.json
# (the live-lane fixture of REPLAY.md section 6.1): bucket columns are NOT NULL,
# counters and arrays have defaults.
COLUMN_EXTRAS = {
    ('todos', 'likes'): 'NOT NULL DEFAULT 0',
    ('todos', 'version'): 'NOT NULL DEFAULT 0',
    ('todos', 'labels'): "NOT NULL DEFAULT '{}'",
}
PULL_ONLY = {'notices'}
# Where pull rpcs run (replay.py run --pull-via): 'primary' (the ordinary
# replay), 'readonly' (a READ ONLY transaction on the primary) or 'standby'
# (a READ ONLY transaction on a hot standby, once it has replayed every
# earlier write).  Both of the latter go through kzc.client_pull (dblink),
# which retries a KZL03 answer on the primary read-write as a client does
# (decisions/0085).  ROUTE holds the mode and the two connection strings.
ROUTE = {'mode': 'primary', 'target': None, 'self': None}


# --------------------------------------------------------------------- corpus

class Corpus:
    """A corpus-shaped directory: a manifest plus transcripts/<case>.json."""

    def __init__(self, root, label):
        self.root = os.path.abspath(root)
        self.label = label
        self.manifest_path = None
        for cand in ('cases/manifest.json', 'manifest.json'):
            p = os.path.join(self.root, cand)
            if os.path.isfile(p):
                self.manifest_path = p
                break
        self.entries = []
        self.load_error = None
        if self.manifest_path:
            try:
                with open(self.manifest_path, encoding='utf-8') as f:
                    self.entries = json.load(f).get('cases', [])
            except (OSError, ValueError, AttributeError) as e:
                self.load_error = str(e)

    def present(self):
        return self.manifest_path is not None

    def transcript(self, entry):
        with open(os.path.join(self.root, entry['file']), encoding='utf-8') as f:
            return json.load(f)

    def scenarios(self):
        """Scenario data: ours for the golden corpus, <dir>/scenarios.json for cases/."""
        for p in (os.path.join(self.root, 'scenarios.json'),
                  os.path.join(REPLAY_DIR, 'scenarios.json') if self.label == 'corpus' else None):
            if p and os.path.isfile(p):
                with open(p, encoding='utf-8') as f:
                    return {k: v for k, v in json.load(f).items() if not k.startswith('$')}
        return {}

    def pin_path(self):
        if self.label == 'corpus':
            return os.path.join(REPLAY_DIR, 'pins.json')
        return os.path.join(self.root, 'pins.json')


def load_fixture(corpus_root):
    with open(os.path.join(corpus_root, 'fixtures', 'domain.json'), encoding='utf-8') as f:
        return json.load(f)['tables']


def check_corpus(corpus, fixture):
    """Structural problems of a corpus directory, as a list of strings."""
    problems = []
    if corpus.load_error:
        return ['%s: manifest does not parse: %s' % (corpus.manifest_path, corpus.load_error)]
    ids = set()
    listed_files = set()
    for e in corpus.entries:
        cid = e.get('id')
        where = 'manifest entry %s' % cid
        if not cid or cid in ids:
            problems.append('%s: missing or duplicate id' % where)
            continue
        ids.add(cid)
        if e.get('file') is None:
            if not e.get('blocked_on'):
                problems.append('%s: file null but no blocked_on' % where)
            if os.path.exists(os.path.join(corpus.root, 'transcripts', cid + '.json')):
                problems.append('%s: blocked but transcripts/%s.json exists' % (where, cid))
            continue
        if e.get('blocked_on'):
            problems.append('%s: has blocked_on but a file' % where)
        if e['file'] != 'transcripts/%s.json' % cid:
            problems.append('%s: file %s does not match its id' % (where, e['file']))
        listed_files.add(os.path.normpath(e['file']))
        try:
            t = corpus.transcript(e)
        except (OSError, ValueError) as err:
            problems.append('%s: transcript does not parse: %s' % (where, err))
            continue
        problems += ['%s: %s' % (cid, p) for p in check_transcript(t, e, fixture)]
        problems += ['%s: %s' % (cid, p) for p in check_canonical(os.path.join(corpus.root, e['file']))]
    tdir = os.path.join(corpus.root, 'transcripts')
    for dirpath, _, files in os.walk(tdir):
        for fn in files:
            if fn.endswith('.json'):
                rel = os.path.normpath(os.path.relpath(os.path.join(dirpath, fn), corpus.root))
                if rel not in listed_files:
                    problems.append('%s: no manifest entry' % rel)
    return problems


def check_canonical(path):
    """Canonical bytes (corpus rules C-1..C-9, as far as they are checkable
    here): no duplicate keys, sorted keys, two-space indent, LF, one trailing
    newline, numbers only integers 0..2^31-1 (increment `by` may be negative)."""
    out = []
    with open(path, 'rb') as f:
        raw = f.read()
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError:
        return ['not UTF-8']

    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            out.append('duplicate keys %s' % sorted({k for k in keys if keys.count(k) > 1}))
        return dict(pairs)
    try:
        doc = json.loads(text, object_pairs_hook=no_dups)
    except ValueError as err:
        return ['does not parse: %s' % err]
    if json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + '\n' != text:
        out.append('not in canonical form (sorted keys, 2-space indent, LF, one trailing newline)')

    def numbers(o, path, parent_key=None):
        if isinstance(o, bool) or o is None or isinstance(o, str):
            return
        if isinstance(o, dict):
            for k, v in o.items():
                numbers(v, '%s.%s' % (path, k), k)
        elif isinstance(o, list):
            for i, v in enumerate(o):
                numbers(v, '%s[%d]' % (path, i))
        elif not isinstance(o, int) or o > 2 ** 31 - 1 or (o < 0 and parent_key != 'by'):
            out.append('number %r at %s is not an integer 0..2^31-1' % (o, path))
    numbers(doc, '$')
    return out


def check_transcript(t, entry, fixture):
    out = []
    if not isinstance(t, dict):
        return ['not a JSON object']
    keys = set(t)
    if keys != set(TOP_KEYS):
        out.append('top-level keys differ: missing %s, extra %s'
                   % (sorted(set(TOP_KEYS) - keys), sorted(keys - set(TOP_KEYS))))
    if t.get('case') != entry['id']:
        out.append('case %r differs from its path/manifest id' % t.get('case'))
    for k in ('cites', 'status', 'priority', 'title'):
        if t.get(k) != entry.get(k):
            out.append('%s differs from the manifest (%r vs %r)' % (k, t.get(k), entry.get(k)))
    want_fencing = 'visibility-horizon' if entry['id'].startswith('fencing/') else 'shared'
    if t.get('fencing') != want_fencing:
        out.append('fencing %r, expected %r for its directory' % (t.get('fencing'), want_fencing))
    ctx = t.get('context')
    if not isinstance(ctx, dict):
        out.append('context is not an object')
    else:
        for k in ('client_id', 'schema_version', 'server', 'user_id'):
            if k not in ctx:
                out.append('context lacks %s' % k)
        for tbl in (ctx.get('server') or {}).get('tables', {}):
            if tbl not in fixture:
                out.append('context.server.tables names unknown table %s' % tbl)
    steps = t.get('steps')
    if not isinstance(steps, list) or not steps:
        out.append('steps is not a non-empty list')
        return out
    for i, s in enumerate(steps, 1):
        if not isinstance(s, dict):
            out.append('step %d is not an object' % i)
            continue
        if s.get('n') != i:
            out.append('step at position %d has n=%r' % (i, s.get('n')))
        kind = s.get('kind')
        if kind not in STEP_KINDS:
            out.append('step %d has unknown kind %r' % (i, kind))
        if kind == 'rpc':
            if s.get('rpc') not in ARG_TYPES:
                out.append('step %d: rpc %r' % (i, s.get('rpc')))
            if not isinstance(s.get('request'), dict) or not isinstance(s.get('response'), dict):
                out.append('step %d: rpc without request/response objects' % i)
        if kind in ('server', 'local') and s.get('op') != 'reap':
            if s.get('table') not in fixture:
                out.append('step %d: unknown table %r' % (i, s.get('table')))
    return out


# ------------------------------------------------------------------ helpers

def declared_columns(t):
    """owner_id + keys of every `columns` map attached to a table + keys of
    every `row` map, across steps and postconditions."""
    acc = {'owner_id'}

    def walk(o):
        if isinstance(o, dict):
            if isinstance(o.get('columns'), dict) and 'table' in o:
                acc.update(o['columns'])
            if isinstance(o.get('row'), dict):
                acc.update(o['row'])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(t.get('steps'))
    walk(t.get('postconditions'))
    return sorted(acc)


def q(s):
    """SQL string literal."""
    return "'" + str(s).replace("'", "''") + "'"


def jlit(v, iso=False):
    """jsonb literal; base64-wrapped in isolation specs, whose step blocks
    end at the first closing brace."""
    return tlit(json.dumps(v, ensure_ascii=False, sort_keys=True), iso) + '::jsonb'


def tlit(text, iso=False):
    """text literal; base64-wrapped in isolation specs."""
    if iso:
        b = base64.b64encode(text.encode('utf-8')).decode('ascii')
        return "convert_from(decode('%s', 'base64'), 'UTF8')" % b
    return q(text)


def text_array(items):
    return 'ARRAY[%s]::text[]' % ', '.join(q(i) for i in items)


def script_name(cid, ext):
    return cid.replace('/', '__') + ext


def rpc_call(step, iso=False):
    """The one call of an rpc step, named arguments straight from the request."""
    types = ARG_TYPES[step['rpc']]
    args = []
    for key in sorted(step['request']):
        val = step['request'][key]
        typ = types.get(key)
        name = '"limit"' if key == 'limit' else key
        if val is None:
            lit = 'NULL' + ('::' + typ if typ else '')
        elif typ == 'jsonb' or isinstance(val, (dict, list)):
            lit = jlit(val, iso)
        elif isinstance(val, bool):
            lit = 'true' if val else 'false'
        elif isinstance(val, int):
            lit = str(val) + ('::' + typ if typ else '')
        else:
            lit = q(val) + ('::' + typ if typ else '')
        args.append('%s => %s' % (name, lit))
    return 'kizunasync.%s(%s)' % (step['rpc'], ', '.join(args))


def claims(t):
    return json.dumps({'sub': t['context']['user_id'], 'role': 'authenticated'})


def routed(step):
    """Is this rpc step a pull that --pull-via sends elsewhere?"""
    return ROUTE['mode'] != 'primary' and step['rpc'] == 'pull'


def routed_call(t, step, n, iso=False):
    """kzc.client_pull(...) for a routed pull step (an expression giving text)."""
    return 'kzc.client_pull(%s, %s, %s, %s, %d)' % (
        tlit(ROUTE['target'], iso), tlit(ROUTE['self'], iso), tlit(claims(t), iso),
        tlit(rpc_call(step), iso), n)


def plan_case(t, scenario):
    """What the replay does with each step: (n, action, step), action one of
    server/reap/rpc/drop-ack/skip."""
    plan = []
    for s in t['steps']:
        kind = s['kind']
        if kind == 'server':
            plan.append((s['n'], 'reap' if s.get('op') == 'reap' else 'server', s))
        elif kind == 'rpc':
            plan.append((s['n'], 'rpc', s))
        elif kind == 'fault' and s.get('fault') == 'drop-ack':
            plan.append((s['n'], 'drop-ack', s))
        elif kind == 'fault' and s.get('fault') == 'transport-error':
            plan.append((s['n'], 'skip', s))
        elif kind in ('local', 'assert'):
            plan.append((s['n'], 'skip', s))
        else:
            plan.append((s['n'], 'unsupported', s))
    return plan


def server_call(op, n, iso=False):
    """CALL of a server-side op (history ops use n = 0)."""
    if op.get('op') == 'reap':
        return 'CALL kzc.reap(%d);' % n
    if op.get('op') == 'delete':
        return 'CALL kzc.server_delete(%s, %s, %d);' % (q(op['table']), q(op['pk']), n)
    hlc = q(op['hlc']) if op.get('hlc') else 'NULL'
    return 'CALL kzc.server_upsert(%s, %s, %s, %s, %d);' % (
        q(op['table']), q(op['pk']), jlit(op.get('columns', {}), iso), hlc, n)


# ------------------------------------------------------------ pgTAP scripts

CAPTURE_ERROR = ("\\if :ERROR\n\\set kz_error :LAST_ERROR_SQLSTATE ': ' :LAST_ERROR_MESSAGE\n"
                 "\\endif\n")


def gen_pgtap(cid, t, scenario):
    declared = text_array(declared_columns(t))
    ctx = t['context']
    lines = ['-- golden transcript %s (generated by test/tools/replay.py; do not edit)' % cid,
             '-- pgTAP: run with pg_prove -d %s <this file>' % DB,
             '\\set ON_ERROR_STOP off', '\\set QUIET on', "SET client_min_messages = warning;"]
    body = []
    ntests = 0

    def guarded(label, sql):
        nonlocal ntests
        ntests += 1
        body.extend(["\\set kz_error ''", sql, CAPTURE_ERROR.rstrip('\n'),
                     'SELECT * FROM kzc.step_ok(%s, :%s);' % (q(label), "'kz_error'")])

    guarded('reset', 'CALL kzc.reset(%s, %d);' % (jlit(ctx), scenario.get('next_seq', 1)))
    for i, op in enumerate(scenario.get('history', []), 1):
        guarded('history %d %s' % (i, op['op']), server_call(op, 0))
    for n, action, s in plan_case(t, scenario):
        if action == 'server':
            guarded('step %d server %s' % (n, s['op']), server_call(s, n))
        elif action == 'reap':
            guarded('step %d server reap' % n, server_call(s, n))
        elif action in ('rpc', 'drop-ack'):
            step = s if action == 'rpc' else dict(s, rpc=s['target'])
            body += ['-- step %d: %s %s' % (n, action, step['rpc']),
                     "\\set kz_result ''", "\\set kz_error ''"]
            if routed(step):
                body += ["SELECT coalesce(%s, '<SQL NULL>') AS kz_result \\gset"
                         % routed_call(t, step, n),
                         CAPTURE_ERROR.rstrip('\n')]
            else:
                body += ['BEGIN;',
                         'SET LOCAL ROLE authenticated;',
                         "SELECT set_config('request.jwt.claims', %s, true) IS NULL AS kz_unused \\gset"
                         % q(claims(t)),
                         "SELECT coalesce((%s)::text, '<SQL NULL>') AS kz_result \\gset" % rpc_call(step),
                         CAPTURE_ERROR.rstrip('\n'),
                         'COMMIT;']
            body.append('CALL kzc.stamp(%d);' % n)
            if action == 'rpc':
                ntests += 2
                body.append("SELECT * FROM kzc.check(%s, %s, :'kz_result', :'kz_error', %s, %s);"
                            % (q('step %d %s' % (n, step['rpc'])), q(step['rpc']),
                               jlit(step['response']), declared))
            else:
                body.append("SELECT diag('KZ note step %d drop-ack raised: ' || :'kz_error') WHERE :'kz_error' <> '';" % n)
        elif action == 'skip':
            body.append('-- step %d: %s %s (client-engine only / no server call)'
                        % (n, s['kind'], s.get('op') or s.get('fault') or ''))
        else:
            body.append('-- step %d: unsupported step kind %s' % (n, s['kind']))
    lines.append('SELECT plan(%d);' % ntests)
    lines += body
    lines += ['SELECT * FROM finish();', '']
    return '\n'.join(lines)


# ------------------------------------------------------ isolation specs

def gen_spec(cid, t, scenario):
    """Held-open transactions: one session per held writer, one for the
    auto-committed server steps, one for the client's rpc steps."""
    # held: server step n -> the step after which its transaction ends, as
    # an integer (COMMIT) or {"after": m, "end": "commit"|"rollback"}.
    held = {}
    for k, v in scenario.get('held', {}).items():
        v = v if isinstance(v, dict) else {'after': v}
        held[int(k)] = (int(v['after']), 'ROLLBACK' if v.get('end') == 'rollback' else 'COMMIT')
    declared = text_array(declared_columns(t))
    ctx = t['context']
    sessions = {}      # name -> list of (stepname, sql)
    perm = []
    commits_after = {}  # n -> [commit step names]

    def add(session, name, sql, notes=()):
        sessions.setdefault(session, []).append((name, sql, notes))
        return name

    def readable(label, v):
        # spec comments may hold braces; SQL blocks may not (base64 there)
        return '# %s: %s' % (label, json.dumps(v, ensure_ascii=False, sort_keys=True))

    for n, action, s in plan_case(t, scenario):
        if action == 'server' or action == 'reap':
            call = server_call(s, n, iso=True)
            if n in held:
                w = 'w%d' % n
                perm.append(add(w, '%s_s%d' % (w, n), 'BEGIN; %s' % call, [readable('step %d server' % n, s)]))
                after, end = held[n]
                commits_after.setdefault(after, []).append(add(w, '%s_%s' % (w, end.lower()), end + ';'))
            else:
                perm.append(add('server', 'srv_s%d' % n, call, [readable('step %d server' % n, s)]))
        elif action in ('rpc', 'drop-ack'):
            step = s if action == 'rpc' else dict(s, rpc=s['target'])
            sql = ['ROLLBACK;',
                   "SELECT set_config('kzc.result', '', false) = '' AS cleared;"]
            if routed(step):
                sql += ["SELECT set_config('kzc.result', coalesce(%s, '<SQL NULL>'), false) <> '' AS called;"
                        % routed_call(t, step, n, iso=True)]
            else:
                sql += ['BEGIN;',
                        'SET LOCAL ROLE authenticated;',
                        "SELECT set_config('request.jwt.claims', %s, true) IS NOT NULL AS claims_set;"
                        % tlit(claims(t), iso=True),
                        "SELECT set_config('kzc.result', coalesce((%s)::text, '<SQL NULL>'), false) <> '' AS called;"
                        % rpc_call(step, iso=True),
                        'COMMIT;']
            if action == 'rpc':
                sql.append('SELECT * FROM kzc.iso_check(%s, %s, %s, %s);'
                           % (q('step %d %s' % (n, step['rpc'])), q(step['rpc']),
                              jlit(step['response'], iso=True), declared))
            notes = [readable('step %d %s request' % (n, step['rpc']), step['request'])]
            if action == 'rpc':
                notes.append(readable('step %d golden response' % n, step['response']))
            perm.append(add('client', 'c_s%d' % n, '\n  '.join(sql), notes))
        elif action == 'unsupported':
            return None
        perm += commits_after.pop(n, [])
    for names in commits_after.values():
        perm += names
    out = ['# golden transcript %s (generated by test/tools/replay.py; do not edit)' % cid,
           '# isolation spec: run with isolationtester against database %s' % DB,
           'setup', '{', '  CALL kzc.reset(%s, %d);' % (jlit(ctx, iso=True), scenario.get('next_seq', 1)), '}', '']
    for sname, steps in sessions.items():
        out += ['session %s' % sname, 'setup { SET client_min_messages = error; }']
        for name, sql, notes in steps:
            out += list(notes) + ['step %s' % name, '{', '  ' + sql, '}']
        out.append('')
    out += ['permutation ' + ' '.join(perm), '']
    return '\n'.join(out)


def generate(corpora, outdir):
    """Write scripts; returns [(corpus, entry, kind, path or None, skip reason)]."""
    os.makedirs(outdir, exist_ok=True)
    for fn in os.listdir(outdir):
        if fn.endswith('.sql') or fn.endswith('.spec'):
            os.unlink(os.path.join(outdir, fn))
    jobs = []
    for corpus in corpora:
        scen = corpus.scenarios()
        for e in sorted(corpus.entries, key=lambda x: x.get('id') or ''):
            cid = e['id']
            if e.get('file') is None:
                jobs.append((corpus, e, 'skip', None, 'blocked on %s' % ', '.join(e.get('blocked_on') or ['?'])))
                continue
            t = corpus.transcript(e)
            sc = scen.get(cid, {})
            if not any(s['kind'] == 'rpc' for s in t['steps']):
                jobs.append((corpus, e, 'skip', None, 'client-engine only: no rpc step'))
                continue
            if sc.get('held'):
                spec = gen_spec(cid, t, sc)
                if spec is None:
                    jobs.append((corpus, e, 'unsupported', None, 'step kind not replayable'))
                    continue
                path = os.path.join(outdir, script_name(cid, '.spec'))
                with open(path, 'w', encoding='utf-8') as f:
                    f.write(spec)
                jobs.append((corpus, e, 'spec', path, None))
            else:
                path = os.path.join(outdir, script_name(cid, '.sql'))
                with open(path, 'w', encoding='utf-8') as f:
                    f.write(gen_pgtap(cid, t, sc))
                jobs.append((corpus, e, 'tap', path, None))
    return jobs


# ------------------------------------------------------------------ running

def pg_bin(name):
    pgc = os.environ.get('PG_CONFIG')
    if pgc:
        try:
            bindir = subprocess.run([pgc, '--bindir'], capture_output=True, text=True,
                                    check=True).stdout.strip()
            if os.path.exists(os.path.join(bindir, name)):
                return os.path.join(bindir, name)
        except (OSError, subprocess.CalledProcessError):
            pass
    return shutil.which(name) or name


def isolationtester_path():
    pgc = os.environ.get('PG_CONFIG') or shutil.which('pg_config') or 'pg_config'
    try:
        lib = subprocess.run([pgc, '--pkglibdir'], capture_output=True, text=True,
                             check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    p = os.path.join(lib, 'pgxs', 'src', 'test', 'isolation', 'isolationtester')
    return p if os.access(p, os.X_OK) else None


def psql(sql=None, db=DB, file=None, check=True):
    cmd = [pg_bin('psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', db]
    cmd += ['-f', file] if file else ['-c', sql]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError((r.stderr or r.stdout).strip())
    return r


def fixture_ddl(fixture):
    """Fixture tables of fixtures/domain.json with the corpus's strict
    owner-only RLS policy."""
    out = []
    for tbl in sorted(fixture):
        spec = fixture[tbl]
        cols = []
        for col in sorted(spec['columns'], key=lambda c: (c not in spec['key_columns'], c)):
            extra = COLUMN_EXTRAS.get((tbl, col), '')
            if col == spec.get('bucket_column'):
                extra = 'NOT NULL'
            cols.append('  %s %s%s' % (col, spec['columns'][col], (' ' + extra) if extra else ''))
        cols.append('  PRIMARY KEY (%s)' % ', '.join(spec['key_columns']))
        out.append('CREATE TABLE public.%s (\n%s\n);' % (tbl, ',\n'.join(cols)))
        out.append('ALTER TABLE public.%s ENABLE ROW LEVEL SECURITY;' % tbl)
        out.append('GRANT SELECT, INSERT, UPDATE, DELETE ON public.%s TO authenticated;' % tbl)
        out.append('CREATE POLICY %s_owner ON public.%s FOR ALL USING (%s = auth.uid()) WITH CHECK (%s = auth.uid());'
                   % (tbl, tbl, spec['bucket_column'], spec['bucket_column']))
        out.append('INSERT INTO kzc.fixture VALUES (%s, %s);' % (q(tbl), text_array(spec['key_columns'])))
    return '\n'.join(out) + '\n'


def provision_sql(fixture):
    out = []
    for tbl in sorted(fixture):
        spec = fixture[tbl]
        out.append("SELECT kizunasync.sync_table('public.%s'::regclass, sync_mode => %s, "
                   "bucket_column => %s, key_columns => %s);"
                   % (tbl, q('pull-only' if tbl in PULL_ONLY else 'read-write'),
                      q(spec['bucket_column']), text_array(spec['key_columns'])))
    return out


def build_database(corpus_root, outdir, fixture):
    """(Re)create the replay database.  Returns a list of provisioning
    problems (the engine may not provide everything yet)."""
    subprocess.run([pg_bin('dropdb'), '--if-exists', '--force', DB], capture_output=True, text=True)
    r = subprocess.run([pg_bin('createdb'), DB], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError('createdb %s: %s' % (DB, r.stderr.strip()))
    psql("ALTER DATABASE %s SET timezone = 'UTC'" % DB, db='postgres')
    psql(file=os.path.join(ROOT, 'test', 'setup', 'standins.sql'))
    psql('CREATE EXTENSION pgtap; CREATE EXTENSION kizunasync;')
    if ROUTE['mode'] != 'primary':
        psql('CREATE EXTENSION dblink;')
    psql(file=os.path.join(REPLAY_DIR, 'kzc.sql'))
    ddl = os.path.join(outdir, 'fixture.sql')
    with open(ddl, 'w', encoding='utf-8') as f:
        f.write(fixture_ddl(fixture))
    psql(file=ddl)
    problems = []
    for stmt in provision_sql(fixture):
        r = psql(stmt, check=False)
        if r.returncode != 0:
            errs = [ln for ln in r.stderr.splitlines() if 'ERROR' in ln] or r.stderr.splitlines() or ['failed']
            problems.append('%s -> %s' % (stmt, errs[0].strip()))
    return problems


TAP_LINE = re.compile(r'^(not ok|ok) \d+ - (.*)$')
KZ_DIAG = re.compile(r'^# KZ (why|have|want|note) ([^\t]*)\t?(.*)$')


def run_tap(path, timeout=120):
    cmd = [shutil.which('pg_prove') or 'pg_prove', '--psql-bin', pg_bin('psql'), '-v', '-d', DB, path]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out = r.stdout + '\n' + r.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b'').decode() if isinstance(e.stdout, bytes) else (e.stdout or '')
        out += '\n!! timed out after %ds' % timeout
    results, diags, planned = [], {}, None
    for line in out.splitlines():
        m = TAP_LINE.match(line.strip())
        if m:
            results.append((m.group(2).strip(), m.group(1) == 'ok'))
            continue
        m = KZ_DIAG.match(line.strip())
        if m:
            diags.setdefault(m.group(2), {})[m.group(1)] = m.group(3)
            continue
        m = re.match(r'^1\.\.(\d+)', line.strip())
        if m and planned is None:
            planned = int(m.group(1))
    errors = [ln.strip() for ln in out.splitlines()
              if re.search(r'(psql:.*ERROR|^ERROR:)', ln.strip())]
    return out, results, diags, planned, errors


def run_spec(path, timeout=180):
    iso = isolationtester_path()
    if iso is None:
        return None
    conninfo = 'dbname=%s' % DB
    with open(path, encoding='utf-8') as f:
        spec = f.read()
    try:
        r = subprocess.run([iso, conninfo], input=spec, capture_output=True, text=True, timeout=timeout)
        out = r.stdout + '\n' + r.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or '') if isinstance(e.stdout, str) else (e.stdout or b'').decode()
        out += '\n!! timed out after %ds' % timeout
    results, diags, step_errors = [], {}, []
    current = None
    for line in out.splitlines():
        s = line.strip()
        m = re.match(r'^step (\S+): ', line)
        if m:
            current = m.group(1)
            continue
        m = re.match(r'^KZ\|([^|]*)\|tier1=(ok|no)\|tier2=(ok|no)', s)
        if m:
            results.append((m.group(1) + ': tier 1 (byte)', m.group(2) == 'ok'))
            results.append((m.group(1) + ': tier 2 (semantic)', m.group(3) == 'ok'))
            continue
        m = re.match(r'^KZ\|([^|]*)\|(why|have|want)\|(.*)$', s)
        if m:
            diags.setdefault(m.group(1), {})[m.group(2)] = m.group(3).rstrip()
            continue
        if s.startswith('ERROR:'):
            step_errors.append((current, s[len('ERROR:'):].strip()))
        elif s.startswith('setup failed:'):
            step_errors.append((None, s))
        elif 'isolationtester:' in s or s.startswith('!!') \
                or re.search(r'\bFATAL\b|syntax error', s):
            step_errors.append((current, s))
    return out, results, diags, step_errors


def run_selftest(outdir):
    """pgTAP self-test of the kzc helpers; returns (ok, not ok)."""
    out, results, _, planned, errors = run_tap(os.path.join(REPLAY_DIR, 'selftest.sql'))
    with open(os.path.join(outdir, 'selftest.out'), 'w', encoding='utf-8') as f:
        f.write(out)
    ok = sum(1 for _, good in results if good)
    bad = len(results) - ok
    if planned is None or len(results) != planned:
        bad += 1
    for line in out.splitlines():
        if line.startswith('not ok') or 'ERROR' in line:
            print('!! self-test: ' + line)
    return ok, bad


def step_number(label):
    m = re.search(r'step (\d+)', label)
    return int(m.group(1)) if m else 0


def first_diff(have, want, path='$'):
    """Path and values of the first difference of two JSON values."""
    if type(have) is not type(want) or isinstance(have, bool) != isinstance(want, bool):
        return path, have, want
    if isinstance(have, dict):
        for k in sorted(set(have) | set(want)):
            if k not in have:
                return '%s.%s' % (path, k), '<missing>', want[k]
            if k not in want:
                return '%s.%s' % (path, k), have[k], '<extra key>'
            d = first_diff(have[k], want[k], '%s.%s' % (path, k))
            if d:
                return d
        return None
    if isinstance(have, list):
        for i, (a, b) in enumerate(zip(have, want)):
            d = first_diff(a, b, '%s[%d]' % (path, i))
            if d:
                return d
        if len(have) != len(want):
            return '%s.length' % path, len(have), len(want)
        return None
    return None if have == want else (path, have, want)


def short(v, n=70):
    s = json.dumps(v, ensure_ascii=False, sort_keys=True) if not isinstance(v, str) else v
    return s if len(s) <= n else s[:n - 3] + '...'


def explain(label, d):
    """One-line reason for a failing step from its KZ diagnostics."""
    why = d.get('why')
    if why and 'have' not in d:
        return '%s: %s' % (label, short(why, 160))
    try:
        have, want = json.loads(d.get('have', 'null')), json.loads(d.get('want', 'null'))
    except ValueError:
        return '%s: %s' % (label, short(why or 'differs', 160))
    fd = first_diff(have, want)
    if fd is None:
        return '%s: %s' % (label, short(why or 'differs only in JSON number/string form', 160))
    return '%s: %s have %s want %s' % (label, fd[0], short(fd[1]), short(fd[2]))


def classify(results, diags, expected_tests, extra_errors):
    """Outcome and detail from the per-test results of one case."""
    t1_fail = [lbl for lbl, ok in results if not ok and lbl.endswith('tier 1 (byte)')]
    first_bad = None
    for lbl, ok in results:
        if not ok and not lbl.endswith('tier 1 (byte)'):
            first_bad = lbl
            break
    if first_bad:
        base = first_bad.split(':')[0]
        return 'DIVERGED', explain(base, diags.get(base, {}))
    if expected_tests is not None and len(results) != expected_tests:
        msg = 'ran %d of %d checks' % (len(results), expected_tests)
        if extra_errors:
            msg += '; ' + short(extra_errors[0], 160)
        return 'DIVERGED', msg
    if not results:
        return 'DIVERGED', 'no result; ' + (short(extra_errors[0], 160) if extra_errors else 'harness produced nothing')
    if t1_fail:
        base = t1_fail[0].split(':')[0]
        return 'PASS-SEMANTIC', 'tier 1 first differs at ' + explain(base, diags.get(base, {}))
    return 'PASS-BYTE', ''


def routed_retries():
    """The KZL03 answers kzc.client_pull retried on the primary in the last case."""
    if ROUTE['mode'] == 'primary':
        return []
    r = subprocess.run([pg_bin('psql'), '-X', '-q', '-At', '-d', DB, '-c',
                        "SELECT 'step ' || step || ': ' || detail FROM kzc.retries ORDER BY step"],
                       capture_output=True, text=True)
    return [ln for ln in r.stdout.splitlines() if ln.strip()] if r.returncode == 0 else ['?']


def replay_job(job, outdir):
    corpus, e, kind, path, reason = job
    if kind == 'skip':
        return 'SKIP', reason
    if kind == 'unsupported':
        return 'UNSUPPORTED', reason
    log = path + '.out'
    if kind == 'tap':
        out, results, diags, planned, errors = run_tap(path)
        with open(log, 'w', encoding='utf-8') as f:
            f.write(out)
        return classify(results, diags, planned, errors)
    got = run_spec(path)
    if got is None:
        return 'UNSUPPORTED', 'isolationtester not found ($(pg_config --pkglibdir)/pgxs/src/test/isolation)'
    out, results, diags, step_errors = got
    with open(log, 'w', encoding='utf-8') as f:
        f.write(out)
    t = corpus.transcript(e)
    rpc_of = {s['n']: s['rpc'] for s in t['steps'] if s['kind'] == 'rpc'}
    for step, msg in step_errors:
        if step is None:
            # before any step: the spec's setup (the reset) or isolationtester itself
            return 'DIVERGED', 'setup: %s' % short(msg, 160)
        if not step.startswith('c_s'):
            m = re.search(r'_s(\d+)$', step)
            return 'DIVERGED', 'step %s server: %s' % (m.group(1) if m else step, short(msg, 160))
        # an rpc step that raised printed no KZ line: its error is the difference
        n = int(step[len('c_s'):])
        if n in rpc_of and not any(step_number(lbl) == n for lbl, _ in results):
            label = 'step %d %s' % (n, rpc_of[n])
            results.append((label + ': tier 2 (semantic)', False))
            diags[label] = {'why': 'error: ' + msg}
    nrpc = len(rpc_of)
    results.sort(key=lambda r: step_number(r[0]))
    return classify(results, diags, 2 * nrpc, [m for _, m in step_errors])


# --------------------------------------------------------------------- pins

def load_pins(path):
    if not os.path.isfile(path):
        return {}
    with open(path, encoding='utf-8') as f:
        return json.load(f).get('pins', {})


def write_pins(path, pins, comment):
    doc = {'$comment': comment, 'pins': {k: pins[k] for k in sorted(pins)}}
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(doc, f, indent=2, ensure_ascii=False, sort_keys=False)
        f.write('\n')


PIN_COMMENT = ('Expected replay outcome of every manifest case (test/tools/replay.py). '
               'The replay lane fails when a case differs from its pin in either direction; '
               'record an improvement by updating the pin in the same commit '
               '(python3 test/tools/replay.py pin --update after a run).')


# --------------------------------------------------------------------- main

def corpora_from(args):
    out = [Corpus(args.corpus, 'corpus')]
    if getattr(args, 'cases', None):
        c = Corpus(args.cases, 'cases')
        if c.present():
            out.append(c)
    return out


def cmd_check(args):
    fixture = load_fixture(args.corpus)
    total = 0
    for corpus in corpora_from(args):
        if not corpus.present():
            print('check: no manifest in %s' % corpus.root)
            total += 1
            continue
        probs = check_corpus(corpus, fixture)
        for p in probs:
            print('problem (%s): %s' % (corpus.label, p))
        pins = load_pins(corpus.pin_path())
        ids = {e.get('id') for e in corpus.entries}
        for p in sorted(set(pins) - ids):
            print('problem (%s): pin %s has no manifest entry' % (corpus.label, p))
            total += 1
        for p in sorted(ids - set(pins)):
            print('problem (%s): manifest case %s has no pin' % (corpus.label, p))
            total += 1
        total += len(probs)
        print('check %s: %d cases, %d problems' % (corpus.label, len(corpus.entries), len(probs)))
    print('check: %d problems' % total)
    return total


def cmd_gen(args):
    jobs = generate(corpora_from(args), args.out)
    for corpus, e, kind, path, reason in jobs:
        print('%-5s %s %s' % (kind, e['id'], path or reason))
    return 0


def cmd_run(args):
    os.makedirs(args.out, exist_ok=True)
    fixture = load_fixture(args.corpus)
    corpora = corpora_from(args)
    print('-- corpus structure check')
    problems = cmd_check(args)
    try:
        prov = [] if args.reuse_db else build_database(args.corpus, args.out, fixture)
    except RuntimeError as err:
        print('!! replay database could not be built: %s' % err)
        if args.results:
            with open(args.results, 'a') as f:
                f.write('corpus-check %d %d 0\nreplay 0 1 0\n' % (1 if problems == 0 else 0, problems))
        return 1
    for p in prov:
        print('!! provisioning failed: %s' % p)
    st_ok, st_fail = run_selftest(args.out)
    print('harness self-test (test/replay/selftest.sql): %d ok, %d not ok' % (st_ok, st_fail))
    os.environ['KZ_CORPUS'] = args.corpus
    import test_replay
    u_ok, u_fail, report = test_replay.run_suite()
    print('harness unit tests (test/tools/test_replay.py): %d ok, %d not ok' % (u_ok, u_fail))
    if u_fail:
        print(report)
    st_ok, st_fail = st_ok + u_ok, st_fail + u_fail
    jobs = generate(corpora, args.out)
    if args.only:
        jobs = [j for j in jobs if j[1]['id'] in args.only]
    counts = {o: 0 for o in OUTCOMES}
    record = {}
    mismatches = []
    passed = failed = skipped = retries = 0
    for job in jobs:
        corpus, e = job[0], job[1]
        outcome, detail = replay_job(job, args.out)
        counts[outcome] += 1
        retried = routed_retries() if job[2] in ('tap', 'spec') else []
        retries += len(retried)
        note = ' [%d pull(s) answered KZL03 and were retried on the primary: %s]' % (
            len(retried), '; '.join(short(r, 90) for r in retried)) if retried else ''
        print(('%s %s %s%s' % (outcome, e['id'], detail, note)).rstrip())
        sys.stdout.flush()
        record[e['id']] = {'outcome': outcome, 'detail': detail, 'pins': corpus.pin_path()}
        pin = load_pins(corpus.pin_path()).get(e['id'])
        if pin is None:
            mismatches.append('%s: %s but no pin' % (e['id'], outcome))
            failed += 1
        elif pin.get('outcome') != outcome:
            mismatches.append('%s: pinned %s, now %s %s' % (e['id'], pin.get('outcome'), outcome, detail))
            failed += 1
        elif outcome == 'SKIP':
            skipped += 1
        else:
            passed += 1
    total = len(jobs)
    print('conformance%s: %d byte, %d semantic, %d diverged, %d unsupported, %d skipped of %d'
          % ('' if ROUTE['mode'] == 'primary' else ' (pulls via %s)' % ROUTE['mode'],
             counts['PASS-BYTE'], counts['PASS-SEMANTIC'], counts['DIVERGED'],
             counts['UNSUPPORTED'], counts['SKIP'], total))
    if ROUTE['mode'] != 'primary':
        print('pulls answered KZL03 (retry on the primary) and retried there: %d' % retries)
    if mismatches:
        print('!! %d case(s) differ from their pin (improvements need a pin update in the same commit:'
              ' python3 test/tools/replay.py pin --update):' % len(mismatches))
        for m in mismatches:
            print('!!   ' + m)
    else:
        print('pins: all %d cases match their pin' % total)
    with open(os.path.join(args.out, 'results.json'), 'w', encoding='utf-8') as f:
        json.dump(record, f, indent=2, sort_keys=True)
    if args.results:
        lane = 'replay' if ROUTE['mode'] == 'primary' else 'replay-' + ROUTE['mode']
        with open(args.results, 'a') as f:
            if ROUTE['mode'] == 'primary':
                f.write('corpus-check %d %d 0\n' % (1 if problems == 0 else 0, problems))
                f.write('replay-selftest %d %d 0\n' % (st_ok, st_fail))
            else:
                # the replay lane reports these; here they only count as failures
                failed += problems + st_fail
            f.write('%s %d %d %d\n' % (lane, passed, failed, skipped))
    return 1 if (failed or problems or st_fail) else 0


def cmd_pin(args):
    if not args.update:
        print('pin: use --update to rewrite the pin files from the last run')
        return 2
    path = os.path.join(args.out, 'results.json')
    with open(path, encoding='utf-8') as f:
        record = json.load(f)
    by_file = {}
    for cid, r in record.items():
        by_file.setdefault(r['pins'], {})[cid] = r
    for pinfile, recs in by_file.items():
        pins = load_pins(pinfile)
        changed = 0
        for cid, r in recs.items():
            old = pins.get(cid)
            if old and old.get('outcome') == r['outcome']:
                continue
            reason = r['detail'] or 'every rpc response equals the golden bytes'
            pins[cid] = {'outcome': r['outcome'], 'reason': reason}
            changed += 1
        write_pins(pinfile, pins, PIN_COMMENT)
        print('pin: %s: %d pin(s) updated' % (os.path.relpath(pinfile, ROOT), changed))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    default_corpus = os.environ.get('KZ_CORPUS') or os.path.join(ROOT, '..', 'shared', 'corpus')
    for name in ('check', 'gen', 'run'):
        p = sub.add_parser(name)
        p.add_argument('--corpus', default=default_corpus)
        p.add_argument('--cases', default=None, help='our own cases directory (same format)')
        if name != 'check':
            p.add_argument('--out', default=os.path.join(ROOT, 'test', 'out', 'replay'))
        if name == 'run':
            p.add_argument('--results', default=None)
            p.add_argument('--only', action='append', help='replay only this case id (repeatable)')
            p.add_argument('--reuse-db', action='store_true',
                           help='do not rebuild the replay database (development)')
        if name in ('gen', 'run'):
            p.add_argument('--pull-via', choices=('primary', 'readonly', 'standby'), default='primary',
                           help='run every pull rpc on the primary (default), in a READ ONLY '
                                'transaction on the primary, or on a hot standby (issue 15)')
            p.add_argument('--standby', default=None,
                           help='libpq connection string of the hot standby (host, port) for --pull-via standby')
    p = sub.add_parser('pin')
    p.add_argument('--update', action='store_true')
    p.add_argument('--out', default=os.path.join(ROOT, 'test', 'out', 'replay'))
    args = ap.parse_args(argv)
    if getattr(args, 'pull_via', 'primary') != 'primary':
        self_conn = 'host=%s port=%s user=%s dbname=%s' % (
            os.environ.get('PGHOST', '/tmp'), os.environ.get('PGPORT', '5432'),
            os.environ.get('PGUSER', 'postgres'), DB)
        if args.pull_via == 'standby' and not args.standby:
            ap.error('--pull-via standby needs --standby CONNINFO')
        ROUTE.update(mode=args.pull_via, self=self_conn,
                     target=self_conn if args.pull_via == 'readonly'
                     else '%s user=%s dbname=%s' % (args.standby, os.environ.get('PGUSER', 'postgres'), DB))
    if args.cmd == 'check':
        return 1 if cmd_check(args) else 0
    if args.cmd == 'gen':
        return cmd_gen(args)
    if args.cmd == 'run':
        rc = cmd_run(args)
        # Divergences pinned as such are not failures; only pin mismatches
        # and corpus problems are, and those are in the results file.
        return rc
    return cmd_pin(args)


if __name__ == '__main__':
    sys.exit(main())
