#!/usr/bin/env python3
"""The monitoring lane's scrape test (issue 31 part 2; test/lanes/monitoring.sh).

Starts Debian's real prometheus-postgres-exporter against the test cluster
(unix-socket DSN) with monitoring/queries.yaml, logged in as kz_monitor, a
LOGIN role that is not a superuser and holds nothing but what the README's
"Monitoring" section grants it (membership in pg_monitor), scrapes its HTTP
endpoint on localhost and checks every metric the queries file defines
against the database: write N synced rows and see the entries grow by N, a
prepared and an idle transaction holding seqs seen in flight, a reap and a
compaction seen as the last runs, and so on.  A self-test first runs the
same presence check against a copy of the queries file whose view is
missing, which must report the metrics missing (so the check can fail).

Prints TAP ("ok N - ...", "not ok N - ..."); exit status 1 on a failure.
Needs PGHOST, PGPORT (the cluster), PGUSER (a superuser); the exporter
listens on 127.0.0.1:$KZ_EXPORTER_PORT (default PGPORT + 7, and + 8 for the
self-test).  Standard library only.
"""
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUERIES = os.path.join(ROOT, 'monitoring', 'queries.yaml')
EXPORTER = os.environ.get('KZ_EXPORTER', '/usr/bin/prometheus-postgres-exporter')
DB = 'kz_monitoring'
ROLE = 'kz_monitor'
OUT = os.environ.get('KZ_OUT', os.path.join(ROOT, 'test', 'out'))
PORT = int(os.environ.get('KZ_EXPORTER_PORT', int(os.environ.get('PGPORT', '5432')) + 7))

n_tests = 0
n_failed = 0
checked = set()


def ok(cond, name, diag=''):
    global n_tests, n_failed
    n_tests += 1
    if not cond:
        n_failed += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', n_tests, name))
    if not cond and diag:
        for line in str(diag).splitlines():
            print('#   ' + line)
    sys.stdout.flush()
    return cond


def psql(sql, db=DB, user=None, check=True):
    cmd = ['psql', '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', db]
    if user:
        cmd += ['-U', user]
    r = subprocess.run(cmd + ['-c', sql], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError('psql failed: %s\n%s' % (sql, r.stderr))
    return r


def q1(sql, db=DB):
    return psql(sql, db).stdout.strip()


def documented_metrics(path):
    """Metric name -> usage, from a postgres_exporter queries file (its
    simple layout: top-level keys, then "    - column:" with "usage:")."""
    names = {}
    key = col = None
    for line in open(path):
        m = re.match(r'^([a-z_][a-z0-9_]*):\s*$', line)
        if m:
            key = m.group(1)
            continue
        m = re.match(r'^    - ([a-z_][a-z0-9_]*):\s*$', line)
        if m:
            col = m.group(1)
            continue
        m = re.match(r'^\s+usage:\s*"?([A-Z]+)"?', line)
        if m and key and col:
            if m.group(1) != 'LABEL':
                names['%s_%s' % (key, col)] = m.group(1)
            col = None
    return names


class Exporter:
    def __init__(self, queries, port, log):
        env = dict(os.environ)
        env['DATA_SOURCE_NAME'] = 'host=%s port=%s user=%s dbname=%s sslmode=disable' % (
            os.environ['PGHOST'], os.environ['PGPORT'], ROLE, DB)
        self.port = port
        self.logpath = log
        self.proc = subprocess.Popen(
            [EXPORTER, '--extend.query-path=' + queries,
             '--web.listen-address=127.0.0.1:%d' % port],
            env=env, stdout=open(log, 'w'), stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while True:
            try:
                self.scrape_text()
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError('the exporter did not come up (see %s)' % log)
                time.sleep(0.3)

    def scrape_text(self):
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % self.port, timeout=30) as r:
            return r.read().decode()

    def scrape(self):
        return Scrape(self.scrape_text())

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


LABEL_RE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


class Scrape:
    def __init__(self, text):
        self.samples = []      # (name, labels, value)
        self.help = {}
        self.type = {}
        for line in text.splitlines():
            if line.startswith('# HELP '):
                name, _, h = line[7:].partition(' ')
                self.help[name] = h
            elif line.startswith('# TYPE '):
                name, _, t = line[7:].partition(' ')
                self.type[name] = t
            elif line and not line.startswith('#'):
                m = re.match(r'^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)', line)
                if m:
                    labels = dict(LABEL_RE.findall(m.group(2) or ''))
                    labels.pop('server', None)
                    self.samples.append((m.group(1), labels, float(m.group(3))))

    def names(self):
        return {s[0] for s in self.samples}

    def get(self, name, **labels):
        checked.add(name)
        found = [v for n, l, v in self.samples if n == name and l == labels]
        if len(found) != 1:
            raise KeyError('%s%s: %d samples' % (name, labels, len(found)))
        return found[0]


def missing(scrape, names):
    return sorted(n for n in names if n not in scrape.names())


def close(a, b, tol):
    return abs(a - b) <= tol


def setup():
    psql('DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB, db='postgres')
    psql('CREATE DATABASE %s' % DB, db='postgres')
    r = subprocess.run(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', DB, '-f',
                        os.path.join(ROOT, 'test', 'setup', 'standins.sql')], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    psql("""
DO $$BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%(r)s') THEN
    EXECUTE 'DROP OWNED BY %(r)s'; EXECUTE 'DROP ROLE %(r)s';
  END IF;
END$$;
-- what README "Monitoring" tells the operator to run, and nothing else
CREATE ROLE %(r)s LOGIN;
GRANT pg_monitor TO %(r)s;
""" % {'r': ROLE}, db='postgres')
    psql("""
CREATE EXTENSION kizunasync;
CREATE TABLE public.todos (id uuid PRIMARY KEY, owner_id uuid NOT NULL, title text,
  CHECK (title IS DISTINCT FROM 'forbidden'));
ALTER TABLE public.todos ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.todos FOR ALL TO authenticated
  USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.todos TO authenticated;
SELECT kizunasync.sync_table('public.todos', bucket_column => 'owner_id', register_clients => true);
CREATE TABLE public.notes (id integer PRIMARY KEY, body text);
ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('public.notes');
-- dead rows stay where the test counts them
ALTER TABLE kizunasync.entries SET (autovacuum_enabled = off);
ALTER TABLE kizunasync.verdicts SET (autovacuum_enabled = off);
ALTER TABLE kizunasync.clients SET (autovacuum_enabled = off);
""")


def analyze():
    psql('ANALYZE kizunasync.entries, kizunasync.verdicts, kizunasync.clients')


UA = '00000000-0000-4000-8000-a10000000001'


def as_user(sql_call):
    """One transaction the way PostgREST runs an rpc call, in its own session."""
    return q1("BEGIN; SET LOCAL ROLE authenticated;"
              " SELECT set_config('request.jwt.claims', '{\"sub\": \"%s\", \"role\": \"authenticated\"}', true);"
              " %s; COMMIT;" % (UA, sql_call))


def self_test(names):
    """The presence check must notice metrics whose view is missing."""
    broken = os.path.join(tempfile.mkdtemp(prefix='kz_mon_'), 'queries.yaml')
    with open(QUERIES) as f, open(broken, 'w') as g:
        g.write(f.read().replace('FROM kizunasync.table_metrics t', 'FROM kizunasync.no_such_view t'))
    exp = Exporter(broken, PORT + 1, os.path.join(OUT, 'monitoring-selftest-exporter.log'))
    try:
        gone = missing(exp.scrape(), names)
    finally:
        exp.stop()
    ok(gone == ['kizunasync_table_entries', 'kizunasync_table_tombstone_ttl_seconds',
                'kizunasync_table_tombstones'],
       'self-test: with the per-table view missing, the check reports exactly its three metrics missing',
       'reported missing: %s' % gone)


def main():
    if not os.access(EXPORTER, os.X_OK):
        print('1..0 # SKIP %s is not installed (scripts/deps.sh installs prometheus-postgres-exporter)' % EXPORTER)
        return 0
    names = documented_metrics(QUERIES)
    setup()
    ok(q1("SELECT rolsuper FROM pg_roles WHERE rolname = '%s'" % ROLE, db='postgres') == 'f'
       and q1("SELECT string_agg(b.rolname, ',') FROM pg_auth_members m JOIN pg_roles b ON b.oid = m.roleid"
              " JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = '%s'" % ROLE, db='postgres') == 'pg_monitor',
       'kz_monitor is a LOGIN role, not a superuser, member of pg_monitor only')
    r = psql('SELECT count(*) FROM kizunasync.changelog', user=ROLE, check=False)
    ok(r.returncode != 0 and 'permission denied' in r.stderr,
       'kz_monitor may not read the bookkeeping itself (permission denied for kizunasync.changelog)', r.stderr)
    r = psql('SELECT * FROM kizunasync.health()', user=ROLE, check=False)
    ok(r.returncode != 0 and 'permission denied' in r.stderr,
       'kz_monitor may not call health() (for the database owner and service_role)', r.stderr)
    self_test(names)

    exp = Exporter(QUERIES, PORT, os.path.join(OUT, 'monitoring-exporter.log'))
    try:
        scenario(exp, names)
    finally:
        exp.stop()
    log = open(os.path.join(OUT, 'monitoring-exporter.log')).read()
    errs = [l for l in log.splitlines() if 'kizunasync' in l and 'level=error' in l]
    ok(not errs, 'the exporter logged no error for the kizunasync queries', '\n'.join(errs[:5]))
    readme = open(os.path.join(ROOT, 'README.md')).read()
    undocumented = sorted(n for n in names if n not in readme)
    ok(not undocumented, 'README documents every metric of monitoring/queries.yaml', undocumented)
    print('1..%d' % n_tests)
    return 1 if n_failed else 0


def scenario(exp, names):
    s0 = exp.scrape()
    gone = missing(s0, names)
    ok(not gone, 'every metric of monitoring/queries.yaml (%d) is exported' % len(names), 'missing: %s' % gone)
    ok(all(s0.help.get(n) for n in names), 'every metric has its help text')
    ok(all(s0.type.get(n) == ('counter' if u == 'COUNTER' else 'gauge') for n, u in names.items())
       and all(n.endswith('_total') == (u == 'COUNTER') for n, u in names.items()),
       'counters are of type counter and end in _total, gauges are gauges',
       {n: s0.type.get(n) for n in names})

    # N synced rows: entries and changes grow by N
    N = 250
    psql('INSERT INTO public.notes SELECT g, %s FROM generate_series(1, %d) g' % ("'n'", N))
    analyze()
    s1 = exp.scrape()
    ok(s1.get('kizunasync_table_entries', table='notes') - s0.get('kizunasync_table_entries', table='notes') == N,
       'kizunasync_table_entries{table="notes"} grew by the %d rows written' % N,
       (s0.get('kizunasync_table_entries', table='notes'), s1.get('kizunasync_table_entries', table='notes')))
    ok(s1.get('kizunasync_changes_total') - s0.get('kizunasync_changes_total') == N,
       'kizunasync_changes_total grew by %d' % N)
    last = int(q1('SELECT last_value FROM kizunasync.change_seq'))
    ok(s1.get('kizunasync_last_seq') == last, 'kizunasync_last_seq is change_seq\'s last value',
       (s1.get('kizunasync_last_seq'), last))
    ok(s1.get('kizunasync_table_entries', table='todos') == 0 and s1.get('kizunasync_table_tombstones', table='notes') == 0,
       'the other table\'s entries and the tombstones stay 0')

    # updates supersede entries: dead rows of the entries, their bytes
    psql("UPDATE public.notes SET body = 'u' WHERE id <= 100")
    time.sleep(0.5)
    s2 = exp.scrape()
    db = q1("SELECT pg_stat_get_dead_tuples('kizunasync.entries'::regclass) || ' ' ||"
            " pg_stat_get_live_tuples('kizunasync.entries'::regclass) || ' ' ||"
            " pg_total_relation_size('kizunasync.entries')").split()
    ok(s2.get('kizunasync_bookkeeping_dead_rows', relation='entries') == int(db[0]) >= 100,
       'kizunasync_bookkeeping_dead_rows{relation="entries"} is pg_stat\'s figure (at least the 100 superseded entries)', db)
    ok(s2.get('kizunasync_bookkeeping_live_rows', relation='entries') == int(db[1]),
       'kizunasync_bookkeeping_live_rows{relation="entries"} is pg_stat\'s figure', db)
    ok(s2.get('kizunasync_bookkeeping_bytes', relation='entries') == int(db[2]),
       'kizunasync_bookkeeping_bytes{relation="entries"} is pg_total_relation_size', db)
    ok(s2.get('kizunasync_bookkeeping_last_vacuum_timestamp_seconds', relation='entries') == 0,
       'kizunasync_bookkeeping_last_vacuum_timestamp_seconds{relation="entries"} is 0 before any VACUUM')
    psql('VACUUM kizunasync.entries')
    s2 = exp.scrape()
    ok(close(s2.get('kizunasync_bookkeeping_last_vacuum_timestamp_seconds', relation='entries'), time.time(), 120)
       and s2.get('kizunasync_bookkeeping_dead_rows', relation='entries') == 0,
       'after VACUUM: its time, and no dead rows')

    # deletes: tombstones, their age and TTL
    psql('DELETE FROM public.notes WHERE id <= 30')
    analyze()
    s3 = exp.scrape()
    ok(s3.get('kizunasync_table_tombstones', table='notes') == 30
       and s3.get('kizunasync_table_entries', table='notes') == N - 30,
       'kizunasync_table_tombstones{table="notes"} is 30 and the entries %d after 30 deletes' % (N - 30))
    ok(0 <= s3.get('kizunasync_tombstones_oldest_age_seconds') < 120
       and s3.get('kizunasync_tombstones_oldest_ttl_seconds') == 30 * 86400
       and s3.get('kizunasync_table_tombstone_ttl_seconds', table='notes') == 30 * 86400,
       'the oldest tombstone is fresh, its TTL the default 30 days')
    psql('SELECT kizunasync.configure(tombstone_ttl_days => 7)')
    psql("SELECT kizunasync.sync_table('public.todos', bucket_column => 'owner_id', register_clients => true,"
         " tombstone_ttl_days => 3)")
    s3 = exp.scrape()
    ok(s3.get('kizunasync_tombstones_oldest_ttl_seconds') == 7 * 86400
       and s3.get('kizunasync_table_tombstone_ttl_seconds', table='notes') == 7 * 86400
       and s3.get('kizunasync_table_tombstone_ttl_seconds', table='todos') == 3 * 86400,
       'the TTLs follow configure(tombstone_ttl_days) and a table\'s own tombstone_ttl_days')
    ok(s3.get('kizunasync_pull_wait_seconds') == 2.0, 'kizunasync_pull_wait_seconds is the default 2 s')
    psql('SELECT kizunasync.configure(pull_wait_ms => 500)')
    ok(exp.scrape().get('kizunasync_pull_wait_seconds') == 0.5, 'kizunasync_pull_wait_seconds follows configure(pull_wait_ms)')

    # seqs in flight: a prepared transaction and an idle one
    psql("BEGIN; INSERT INTO public.notes VALUES (1001, 'p'), (1002, 'p'); PREPARE TRANSACTION 'kz_mon_prepared'")
    idle = subprocess.Popen(['psql', '-X', '-q', '-d', DB], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)
    idle.stdin.write("BEGIN;\nINSERT INTO public.notes VALUES (2001, 'r');\n")
    idle.stdin.flush()
    try:
        deadline = time.time() + 10
        while q1('SELECT count(*) FROM kizunasync.in_flight WHERE pid IS NOT NULL') != '1' and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(2)
        s4 = exp.scrape()
        ok(s4.get('kizunasync_in_flight_transactions', state='prepared') == 1
           and s4.get('kizunasync_in_flight_seqs', state='prepared') == 2,
           'the prepared transaction: 1 in flight with its 2 seqs')
        ok(s4.get('kizunasync_in_flight_transactions', state='running') == 1
           and s4.get('kizunasync_in_flight_seqs', state='running') == 1
           and s4.get('kizunasync_in_flight_oldest_age_seconds', state='running') >= 2
           and s4.get('kizunasync_in_flight_oldest_age_seconds', state='prepared') >= 2,
           'the idle transaction: 1 running with 1 seq, open for at least 2 s; the prepared one as old',
           [(n, l, v) for n, l, v in s4.samples if n.startswith('kizunasync_in_flight')])
    finally:
        idle.stdin.write('ROLLBACK;\n\\q\n')
        idle.stdin.close()
        idle.wait(30)
        psql("ROLLBACK PREPARED 'kz_mon_prepared'")
    s5 = exp.scrape()
    ok(all(s5.get(m, state=st) == 0 for m in ('kizunasync_in_flight_transactions', 'kizunasync_in_flight_seqs',
                                              'kizunasync_in_flight_oldest_age_seconds')
           for st in ('running', 'prepared')),
       'after ROLLBACK and ROLLBACK PREPARED nothing is in flight')

    # retention: tombstones past their TTL, a reap, a compaction
    psql("UPDATE kizunasync.entries SET deleted_at = now() - interval '40 days' WHERE kind = 'd'")   # time passes
    s6 = exp.scrape()
    ok(s6.get('kizunasync_tombstones_oldest_age_seconds') >= 40 * 86400,
       'tombstones made 40 days old: kizunasync_tombstones_oldest_age_seconds says so')
    ok(s6.get('kizunasync_retention_last_run_timestamp_seconds', job='reap_tombstones') == 0
       and s6.get('kizunasync_reap_horizon_seq') == 0
       and s6.get('kizunasync_reap_horizon_raised_timestamp_seconds') == 0,
       'no reap yet: last run 0, horizon 0, never raised')
    top = int(q1('SELECT max(seq) FROM kizunasync.tombstones'))
    psql('SELECT kizunasync.reap_tombstones()')
    psql('SELECT kizunasync.compact_changelog()')
    analyze()
    s7 = exp.scrape()
    runs = q1("SELECT string_agg(job || ' ' || rows_removed || ' ' || duration_ms, ',' ORDER BY id)"
              " FROM kizunasync.retention_runs")
    ok(s7.get('kizunasync_retention_last_run_removed_rows', job='reap_tombstones') == 30
       and close(s7.get('kizunasync_retention_last_run_timestamp_seconds', job='reap_tombstones'), time.time(), 120),
       'the reap: its last run now, 30 rows removed', runs)
    dur = float(q1("SELECT duration_ms / 1000 FROM kizunasync.retention_runs WHERE job = 'compact_changelog'"))
    ok(s7.get('kizunasync_retention_last_run_removed_rows', job='compact_changelog') == 0
       and close(s7.get('kizunasync_retention_last_run_duration_seconds', job='compact_changelog'), dur, 1e-9)
       and close(s7.get('kizunasync_retention_last_run_timestamp_seconds', job='compact_changelog'), time.time(), 120),
       'the compaction: its last run now, its duration as recorded, nothing removed', runs)
    ok(s7.get('kizunasync_retention_last_run_timestamp_seconds', job='prune_clients') == 0,
       'prune_clients never ran: 0')
    ok(s7.get('kizunasync_reap_horizon_seq') == top
       and close(s7.get('kizunasync_reap_horizon_raised_timestamp_seconds'), time.time(), 120),
       'the reap horizon is the highest seq reaped, raised now', (s7.get('kizunasync_reap_horizon_seq'), top))
    ok(s7.get('kizunasync_table_tombstones', table='notes') == 0 and s7.get('kizunasync_tombstones_oldest_age_seconds') == 0,
       'no tombstone left')

    # clients and the ledger: a pull that registers its client, a push with a rejection
    ok(s7.get('kizunasync_clients_registered') == 0 and s7.get('kizunasync_clients_oldest_seen_age_seconds') == 0
       and s7.get('kizunasync_ledger_verdicts') == 0 and s7.get('kizunasync_ledger_rejections') == 0,
       'no client, no verdict yet')
    as_user("SELECT kizunasync.pull('[{\"table\": \"todos\", \"params\": {\"owner_id\": \"%s\"}}]', '0', 1, 500,"
            " '00000000-0000-4000-8000-c10000000001') IS NOT NULL" % UA)
    batch = ('{"mutations": ['
             '{"mutation_id": "00000000-0000-4000-8000-f10000000001", "op": "insert", "table": "todos",'
             ' "pk": "00000000-0000-4000-8000-e10000000001", "columns": {"owner_id": "%(u)s", "title": "a"}},'
             '{"mutation_id": "00000000-0000-4000-8000-f10000000002", "op": "insert", "table": "todos",'
             ' "pk": "00000000-0000-4000-8000-e10000000002", "columns": {"owner_id": "%(u)s", "title": "b"}},'
             '{"mutation_id": "00000000-0000-4000-8000-f10000000003", "op": "insert", "table": "todos",'
             ' "pk": "00000000-0000-4000-8000-e10000000003", "columns": {"owner_id": "%(u)s", "title": "forbidden"}}'
             ']}') % {'u': UA}
    as_user("SELECT kizunasync.push('%s', NULL, 1) IS NOT NULL" % batch)
    analyze()
    time.sleep(1)
    s8 = exp.scrape()
    truth = q1("SELECT count(*) || ' ' || count(*) FILTER (WHERE reason IS NOT NULL) FROM kizunasync.verdicts").split()
    ok(truth == ['3', '1'], 'the push recorded 3 verdicts, 1 rejected', truth)
    ok(s8.get('kizunasync_ledger_verdicts') == int(truth[0]) and s8.get('kizunasync_ledger_rejections') == int(truth[1]),
       'kizunasync_ledger_verdicts and kizunasync_ledger_rejections match the ledger',
       (s8.get('kizunasync_ledger_verdicts'), s8.get('kizunasync_ledger_rejections'), truth))
    ok(s8.get('kizunasync_clients_registered') == 1 and 0 < s8.get('kizunasync_clients_oldest_seen_age_seconds') < 120,
       'the pull registered its client, seen moments ago')
    ok(s8.get('kizunasync_table_entries', table='todos') == 2,
       'kizunasync_table_entries{table="todos"} is the 2 applied inserts')

    unchecked = sorted(set(names) - checked)
    ok(not unchecked, 'every metric\'s value was checked against the database', unchecked)


if __name__ == '__main__':
    try:
        sys.exit(main())
    except Exception as e:     # a setup step failed: one failure, with its reason
        ok(False, 'the monitoring check ran to its end', repr(e))
        print('1..%d' % n_tests)
        sys.exit(1)
