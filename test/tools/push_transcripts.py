#!/usr/bin/env python3
"""Push-side transcript check (a developer aid, not the replay lane).

Replays the push steps of the golden transcripts of the given families
against the cluster named by PGHOST/PGPORT, one fresh database per
transcript, and compares each push response with the golden bytes after
projecting server_row to the transcript's declared columns (REPLAY.md 2.4).
Server steps run as the superuser.  A pull step is stood in for by recording
the bucket grants of the rows its golden page delivers (push needs them for
DELETE_WINS), or with KZ_REAL_PULL=1 runs kizunasync.pull and is compared
too (deleted_at masked, rows projected).

    KZ_CORPUS=/work/shared/corpus python3 test/tools/push_transcripts.py push increment array conflict rebase lifecycle
"""
import json, glob, subprocess, sys, os
CORPUS = os.environ.get('KZ_CORPUS', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'shared', 'corpus'))
def psql(db, sql, user_claims=None):
    r = subprocess.run(['psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', db], input=sql, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return r.stdout.strip()
def q(s): return "'" + s.replace("'", "''") + "'"
SETUP = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'setup', 'standins.sql')).read()
TABLES = """
CREATE TABLE public.todos (id uuid PRIMARY KEY, owner_id uuid NOT NULL, title text, done boolean,
  likes integer NOT NULL DEFAULT 0, version integer NOT NULL DEFAULT 0, labels text[] NOT NULL DEFAULT '{}', deleted_at timestamptz);
CREATE TABLE public.seats (hall bigint, seat integer, owner_id uuid NOT NULL, holder text, PRIMARY KEY (hall, seat));
"""
def policy(t):
    return f"""ALTER TABLE public.{t} ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.{t} FOR ALL TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.{t} TO authenticated;"""
def declared(t):
    s = {'owner_id'}
    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ('columns', 'row') and isinstance(v, dict): s.update(v.keys())
                walk(v)
        elif isinstance(x, list):
            for v in x: walk(v)
    walk(t['steps']); walk(t['postconditions'])
    return s
def project(resp, dec):
    def pr(row):
        return None if row is None else {k: v for k, v in row.items() if k in dec}
    if 'verdicts' in resp:
        for v in resp['verdicts']:
            if 'server_row' in v: v['server_row'] = pr(v['server_row'])
    if 'batch' in resp: resp['batch']['server_row'] = pr(resp['batch']['server_row'])
    return resp
# KZ_REAL_PULL=1: run pull steps through kizunasync.pull and compare them too
# (deleted_at masked); otherwise a pull step only records its rows' grants.
REAL_PULL = os.environ.get('KZ_REAL_PULL') == '1'
results = {}
for f in sorted(sum([glob.glob(f'{CORPUS}/transcripts/{d}/*.json') for d in sys.argv[1:]], [])):
    t = json.load(open(f)); case = t['case']; ctx = t['context']; dec = declared(t)
    pushes = [s for s in t['steps'] if s['kind'] == 'rpc' and s['rpc'] == 'push']
    if not pushes: continue
    db = os.environ.get('KZ_CHECK_DB', 'kz_push_transcripts')
    subprocess.run(['dropdb', '--if-exists', db], capture_output=True); subprocess.run(['createdb', db], check=True)
    psql(db, SETUP + 'SET client_min_messages=warning; CREATE EXTENSION kizunasync;' + TABLES + policy('todos') + policy('seats'))
    for tn, tc in ctx['server']['tables'].items():
        keys = tc.get('key_columns', ['id'])
        psql(db, f"SELECT kizunasync.sync_table('public.{tn}', bucket_column => 'owner_id', key_columns => ARRAY{keys}::text[], conflict_mode => {q(tc.get('conflict_mode','arrival'))}, conflict_journal => {str(tc.get('conflict_journal', False)).lower()}, min_schema_version => {ctx['server']['min_schema_version']})")
    uid = ctx['user_id']; status = 'PASS'
    for s in t['steps']:
        try:
            if s['kind'] == 'server' and s['op'] == 'upsert':
                tn = s['table']; keys = ctx['server']['tables'][tn].get('key_columns', ['id'])
                pkobj = {keys[0]: s['pk']} if len(keys) == 1 else dict(zip(keys, json.loads(s['pk'])))
                cols = s['columns']; allc = dict(cols); allc.update(pkobj)
                pred = ' AND '.join(f"t.{k} = r.{k}" for k in keys)
                setl = ', '.join(f"{c} = r.{c}" for c in cols)
                psql(db, f"""DO $$ BEGIN
                  UPDATE public.{tn} t SET {setl} FROM jsonb_populate_record(NULL::public.{tn}, {q(json.dumps(allc))}) r WHERE {pred};
                  IF NOT FOUND THEN INSERT INTO public.{tn} ({', '.join(allc)}) SELECT {', '.join('r.'+c for c in allc)} FROM jsonb_populate_record(NULL::public.{tn}, {q(json.dumps(allc))}) r; END IF; END $$;""")
                if s.get('hlc'):
                    m = {c: s['hlc'] for c in cols}
                    psql(db, f"INSERT INTO kizunasync.row_hlc (table_name, pk, column_hlc) VALUES ({q(tn)}, {q(s['pk'])}, {q(json.dumps(m))}) ON CONFLICT (table_name, pk) DO UPDATE SET column_hlc = kizunasync.row_hlc.column_hlc || EXCLUDED.column_hlc")
            elif s['kind'] == 'server' and s['op'] == 'delete':
                tn = s['table']; keys = ctx['server']['tables'][tn].get('key_columns', ['id'])
                psql(db, f"DELETE FROM public.{tn} WHERE {keys[0]}::text = {q(s['pk'])}")
            elif s['kind'] == 'rpc' and s['rpc'] == 'pull' and not REAL_PULL:
                for r in s['response'].get('rows', []):
                    psql(db, f"INSERT INTO kizunasync.bucket_grants (user_id, table_name, bucket_value) VALUES ({q(uid)}, {q(r['table'])}, {q(r['row']['owner_id'])}) ON CONFLICT DO NOTHING")
            elif s['kind'] == 'rpc' and s['rpc'] == 'pull':
                req = s['request']
                out = psql(db, f"""BEGIN; SELECT set_config('request.jwt.claims', {q(json.dumps({'sub': uid, 'role': 'authenticated'}))}, true) \\g /dev/null
SET LOCAL ROLE authenticated;
SELECT kizunasync.pull({q(json.dumps(req['buckets']))}, {q(req['cursor'])}, {req['schema_version']}, {req.get('limit', 500)});
COMMIT;""")
                got = json.loads([l for l in out.splitlines() if l.startswith('{')][-1])
                for r in got.get('rows', []):
                    r['row'] = {k: v for k, v in r['row'].items() if k in dec}
                if not got.get('conflicts'): got.pop('conflicts', None)
                want = s['response']
                mask = lambda x: {**x, 'tombstones': [{**t, 'deleted_at': '<deleted_at>'} for t in x.get('tombstones', [])]}
                if mask(got) != mask(want):
                    status = f"DIVERGED step {s['n']} (pull): got {json.dumps(got, sort_keys=True)} want {json.dumps(want, sort_keys=True)}"; break
            elif (s['kind'] == 'rpc' and s['rpc'] == 'push') or (s['kind'] == 'fault' and s.get('fault') == 'drop-ack' and s['target'] == 'push'):
                req = s['request']
                out = psql(db, f"""BEGIN; SELECT set_config('request.jwt.claims', {q(json.dumps({'sub': uid, 'role': 'authenticated'}))}, true) \\g /dev/null
SET LOCAL ROLE authenticated;
SELECT kizunasync.push({q(json.dumps(req['batch']))}, {q(req['last_mutation_id']) if req['last_mutation_id'] else 'NULL'}, {req['schema_version']}, {q(req['client_id']) if req.get('client_id') else 'NULL'});
COMMIT;""")
                if s['kind'] == 'rpc':
                    got = project(json.loads(out.splitlines()[-2] if out.splitlines()[-1]=='COMMIT' else out.splitlines()[-1]), dec)
                    if got != s['response']:
                        status = f"DIVERGED step {s['n']}: got {json.dumps(got, sort_keys=True)} want {json.dumps(s['response'], sort_keys=True)}"; break
        except Exception as e:
            status = f"ERROR step {s['n']}: {e}"; break
    print(case, status)
    results[case] = status
subprocess.run(['dropdb', '--if-exists', os.environ.get('KZ_CHECK_DB', 'kz_push_transcripts')], capture_output=True)
bad = [c for c, v in results.items() if v != 'PASS']
print('%d passed, %d failed' % (len(results) - len(bad), len(bad)))
sys.exit(1 if bad else 0)
