"""Helpers of the replica lane (issue 15): connections to the primary and to
its hot standby, waiting for replay, pulls the way a Data API client makes
them, TAP-style checks.  Python stdlib only; every statement goes through
psql (PG* environment for the primary, KZ_STANDBY_PORT for the standby).
"""
import json
import os
import subprocess
import time

PRIMARY_PORT = os.environ.get("PGPORT", "5432")
STANDBY_PORT = os.environ.get("KZ_STANDBY_PORT", str(int(PRIMARY_PORT) + 1))
HOST = os.environ.get("PGHOST", "/tmp")


class Failed(Exception):
    pass


class SqlError(Exception):
    """An ERROR from psql; .sqlstate and .message (VERBOSITY verbose)."""

    def __init__(self, sqlstate, message, text):
        super().__init__(text)
        self.sqlstate = sqlstate
        self.message = message


def conninfo(db, standby=False):
    return "host=%s port=%s dbname=%s" % (HOST, STANDBY_PORT if standby else PRIMARY_PORT, db)


def psql(db, sql, standby=False, check=True):
    """Run sql (one psql -c), return the rows as lists of fields ('|')."""
    r = subprocess.run(["psql", "-X", "-q", "-At", "-F", "|", "-v", "ON_ERROR_STOP=1",
                        "-v", "VERBOSITY=verbose", "-d", conninfo(db, standby), "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        err = r.stderr.strip()
        if not check:
            return None
        state, msg = "", err
        for line in err.splitlines():
            if line.startswith("ERROR:"):
                rest = line[len("ERROR:"):].strip()
                if len(rest) > 6 and rest[5] == ":":
                    state, msg = rest[:5], rest[6:].strip()
                else:
                    msg = rest
                break
        raise SqlError(state, msg, err)
    return [ln.split("|") for ln in r.stdout.splitlines() if ln != ""]


def one(db, sql, standby=False):
    rows = psql(db, sql, standby)
    return rows[0][0] if rows else None


class Session:
    """A long-lived psql process (a writer that holds its transaction open);
    send() does not wait, wait() collects the output up to a marker."""

    def __init__(self, db, standby=False):
        self.p = subprocess.Popen(["psql", "-X", "-q", "-At", "-F", "|", "-v", "ON_ERROR_STOP=0",
                                   "-d", conninfo(db, standby)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.pending = 0

    def send(self, sql):
        self.p.stdin.write(sql + "\n\\echo __KZ_END__\n")
        self.p.stdin.flush()
        self.pending += 1

    def wait(self):
        out = []
        for line in self.p.stdout:
            line = line.rstrip("\n")
            if line == "__KZ_END__":
                self.pending -= 1
                if self.pending == 0:
                    return out
                continue
            out.append(line)
        raise Failed("psql session ended: %s" % out)

    def query(self, sql):
        self.send(sql)
        return self.wait()

    def pid(self):
        return int(self.query("SELECT pg_backend_pid();")[0])

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait()


def flush_primary(db):
    """A committed transaction flushes every WAL record before it (a
    held-open transaction's records may sit unflushed, and a walsender sends
    flushed WAL only)."""
    psql(db, "SELECT txid_current()")


def wait_replayed(db, lsn=None, timeout=60):
    """Until the standby has replayed everything the primary wrote so far."""
    if lsn is None:
        lsn = one(db, "SELECT pg_current_wal_lsn()")
        flush_primary(db)
    t0 = time.monotonic()
    while True:
        # asked of the standby's postgres database: db itself may not be
        # replayed yet (a database just created on the primary)
        if one("postgres", "SELECT pg_last_wal_replay_lsn() >= '%s'::pg_lsn" % lsn, standby=True) == "t":
            return lsn
        if time.monotonic() - t0 > timeout:
            raise Failed("standby did not replay up to %s in %ds" % (lsn, timeout))
        time.sleep(0.01)


def claims(sub):
    return json.dumps({"sub": sub, "role": "authenticated"})


def pull_sql(sub, buckets, cursor, limit=500, client_id=None, read_only=False):
    return ("BEGIN%s; SET LOCAL ROLE authenticated; "
            "SELECT set_config('request.jwt.claims', '%s', true) IS NULL AS unused \\gset\n"
            "SELECT kizunasync.pull('%s'::jsonb, '%s', 1, %d%s)::text; COMMIT;"
            % (" READ ONLY" if read_only else "", claims(sub), json.dumps(buckets), cursor, limit,
               ", '%s'::uuid" % client_id if client_id else ""))


def pull(db, sub, buckets, cursor, limit=500, client_id=None, standby=False, read_only=False):
    """One pull in its own transaction; the page as a dict (SqlError on error)."""
    # a pull never waits for long (decision 0083); one that does is a failure
    env = dict(os.environ, PGOPTIONS=os.environ.get("PGOPTIONS", "") + " -c statement_timeout=30s")
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
                        "-d", conninfo(db, standby)],
                       input=pull_sql(sub, buckets, cursor, limit, client_id, read_only),
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        err = r.stderr.strip()
        for line in err.splitlines():
            if line.startswith("ERROR:"):
                rest = line[len("ERROR:"):].strip()
                raise SqlError(rest[:5], rest[6:].strip(), err)
        raise SqlError("", err, err)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1])


class Tap:
    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def ok(self, cond, what, detail=None):
        if cond:
            self.passed += 1
            print("ok %d - %s" % (self.passed + self.failed, what))
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.passed + self.failed, what))
            if detail is not None:
                for line in str(detail).splitlines():
                    print("#   " + line)
        return cond

    def same(self, got, want, what):
        return self.ok(got == want, what, "got  %r\nwant %r" % (got, want))

    def done(self):
        print("1..%d" % (self.passed + self.failed))
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        results = os.environ.get("KZ_REPLICA_TOTALS")
        if results:
            with open(results, "a") as f:
                f.write("%d %d\n" % (self.passed, self.failed))
        return 0 if self.failed == 0 else 1


def fresh_db(db, sql):
    """A new database on the primary with the extensions and sql run in it;
    returns once the standby has it too."""
    subprocess.run(["dropdb", "--if-exists", "--force", db], check=True, capture_output=True)
    subprocess.run(["createdb", db], check=True, capture_output=True)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, "-f",
                    os.path.join(root, "test", "setup", "standins.sql")], check=True, capture_output=True)
    r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db],
                       input="SET client_min_messages = error;\n" + sql, capture_output=True, text=True)
    if r.returncode != 0:
        raise Failed("setup of %s failed: %s" % (db, r.stderr))
    wait_replayed(db)


def pg_bindir():
    pgc = os.environ.get("PG_CONFIG")
    if pgc:
        return subprocess.run([pgc, "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
    return "/usr/lib/postgresql/15/bin"


def rundir():
    return os.environ.get("KZ_RUNDIR") or "/tmp/kizunasync-%s" % PRIMARY_PORT


def standby_restart(target_lsn=None):
    """Restart the standby; with target_lsn, replay stops just before the WAL
    record that starts there and pauses (recovery_target_lsn, not
    inclusive); without, it streams again."""
    data = os.path.join(rundir(), "standby")
    conf = os.path.join(data, "kz_target.conf")
    if target_lsn:
        with open(conf, "w") as f:
            f.write("recovery_target_lsn = '%s'\nrecovery_target_inclusive = off\n"
                    "recovery_target_action = 'pause'\n" % target_lsn)
        subprocess.run(["chown", "postgres:postgres", conf], check=True)
    elif os.path.exists(conf):
        os.unlink(conf)
    r = subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(pg_bindir(), "pg_ctl"), "-D", data,
                        "-l", os.path.join(rundir(), "standby.log"), "-m", "fast", "-w", "-t", "120", "restart"],
                       capture_output=True, text=True, cwd="/")
    if r.returncode != 0:
        raise Failed("standby restart failed: %s %s" % (r.stdout, r.stderr))
    t0 = time.monotonic()
    while True:
        state = psql("postgres", "SELECT pg_is_in_recovery(), pg_get_wal_replay_pause_state()",
                     standby=True, check=False)
        if state and state[0][0] == "t" and (target_lsn is None or state[0][1] == "paused"):
            return
        if time.monotonic() - t0 > 120:
            raise Failed("standby did not reach %s: %s" % (target_lsn or "streaming", state))
        time.sleep(0.05)


def wal_records(start, end, with_tx=False):
    """Start LSNs of the WAL records in [start, end) of the primary, with a
    short description each (and with_tx, the record's xid, third)."""
    r = subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(pg_bindir(), "pg_waldump"),
                        "-p", os.path.join(rundir(), "data", "pg_wal"), "-s", start, "-e", end],
                       capture_output=True, text=True, cwd="/")
    out = []
    for line in r.stdout.splitlines():
        parts = dict(p.strip().split(": ", 1) for p in line.split(", ") if ": " in p)
        if "lsn" in parts and "rmgr" in line:
            rmgr = line.split()[1]
            desc = line.split("desc: ", 1)[1] if "desc: " in line else ""
            rec = (parts["lsn"].split()[0], rmgr + " " + desc[:60])
            out.append(rec + (int(parts.get("tx", "0").split()[0]),) if with_tx else rec)
    if not out:
        raise Failed("pg_waldump found no records in [%s, %s): %s" % (start, end, r.stderr))
    return out
