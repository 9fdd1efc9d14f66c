#!/usr/bin/env python3
"""Differential fuzz of what a device holds against what its user may see
(issue 32 part 2): model devices of ordinary authenticated users pull the
real pull RPC while one writer changes rows and, without writing them, what
users may see; after every drain each device must equal what its user may
SELECT.

One database, one writer session (a superuser: the tables' owner) and one
session per user (SET ROLE authenticated, the user's JWT claims), run one
step at a time, so a seed replays exactly (--seed).  Tables:

  vdocs(id, org, project, status, private, owner_id, v, secret), bucket
      column org (1 .. 3, now and then NULL); RLS: the caller is a member of
      the row's project (vmembers, not synced) and the row is not private
      or the caller owns it;
  vnotes(id, project, v), unbucketed, the same membership policy.

Devices (2 per user, 3 users; each sends its client_id and the tables
register clients, as the README asks of a client that pages through a
bootstrap, so one paused across a reap is told CHECKPOINT_EXPIRED): a
random subset of orgs, now and then with
the extra param {"status": "open"}, now and then vnotes too (now and then
with a project param), a page limit of 1 .. 50.  Steps (random, weighted):
upserts, updates, bucket moves (to NULL too), project moves, deletes and
re-inserts of deleted keys, key changes, rolled-back moves, private flips,
owner reassignments, membership added or removed (the owner's trigger on
vmembers calls kizunasync.resync_bucket for the buckets the membership
decides: the documented remedy, decisions/0093), the column secret revoked
or granted again (then the owner calls resync_bucket for every bucket),
compact_changelog, reaps (tombstones backdated past their TTL, then
reap_tombstones: devices behind the horizon get CHECKPOINT_EXPIRED, drop
their state and bootstrap again), VACUUM of the bookkeeping, and devices
pulling a few pages.  Every --check-every steps, and at the end, every
device drains (has_more false) and is compared, row document by row
document, with a SELECT of the columns its user may read, run in the user's
own session under RLS with the device's params.

--no-remedy leaves the trigger out and never calls resync_bucket: a run
must then fail (membership changes and the revoked column are never
reconciled), which shows the check can fail.  --writes-only drops the
membership and column privilege steps: every visibility change is then a
write to the row, which must reach each device by itself (a tombstone for a
grant holder that may no longer see the row, decisions/0024
"Visibility"); on d5d3e61, which withheld such a change, it fails.

  python3 test/tools/vis_fuzz.py [--seeds 5] [--seed S] [--steps 400] [--no-remedy] [--writes-only]

Uses the PG* environment (scripts/devenv.sh) and a database it creates
(KZ_VIS_DB, default kz_vis_fuzz).  Python stdlib only.  Exit status 0 when
every device of every seed matched at every check.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seq_stress import Session, psql_cmd, run_sql, ROOT  # noqa: E402

DB = os.environ.get("KZ_VIS_DB", "kz_vis_fuzz")
USERS = ["00000000-0000-4000-8000-%012d" % (700 + i) for i in range(3)]
ORGS = [1, 2, 3]
PROJECTS = [1, 2, 3, 4]
KEYS = 40
DOC_COLS = ["id", "org", "project", "status", "private", "owner_id", "v", "secret"]

SETUP = """
SET client_min_messages = warning;
CREATE EXTENSION kizunasync;
CREATE TABLE vmembers (project int, user_id uuid, PRIMARY KEY (project, user_id));
CREATE TABLE vdocs (id int PRIMARY KEY, org int, project int NOT NULL, status text NOT NULL,
	private boolean NOT NULL, owner_id uuid, v int, secret int);
CREATE TABLE vnotes (id int PRIMARY KEY, project int NOT NULL, v int);
ALTER TABLE vdocs ENABLE ROW LEVEL SECURITY;
ALTER TABLE vnotes ENABLE ROW LEVEL SECURITY;
CREATE POLICY member_reads ON vdocs FOR SELECT TO authenticated
	USING (EXISTS (SELECT 1 FROM public.vmembers m WHERE m.project = vdocs.project AND m.user_id = auth.uid())
		   AND (NOT private OR owner_id = auth.uid()));
CREATE POLICY member_reads ON vnotes FOR SELECT TO authenticated
	USING (EXISTS (SELECT 1 FROM public.vmembers m WHERE m.project = vnotes.project AND m.user_id = auth.uid()));
GRANT SELECT ON vdocs, vnotes, vmembers TO authenticated;
SELECT kizunasync.sync_table('vdocs', bucket_column => 'org', register_clients => true) IS NOT NULL AS synced;
SELECT kizunasync.sync_table('vnotes', register_clients => true) IS NOT NULL AS synced;
"""

# The documented remedy (decisions/0093): the owner's SECURITY DEFINER
# trigger function writes again the buckets whose rows' visibility the
# membership change decides.
REMEDY = """
CREATE FUNCTION vmembers_resync() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
	projects int[] := ARRAY[CASE WHEN TG_OP <> 'INSERT' THEN OLD.project END,
							CASE WHEN TG_OP <> 'DELETE' THEN NEW.project END];
BEGIN
	PERFORM kizunasync.resync_bucket('public.vdocs', jsonb_build_object('org', d.org))
	   FROM (SELECT DISTINCT org FROM public.vdocs WHERE project = ANY (projects) AND org IS NOT NULL) d;
	IF EXISTS (SELECT 1 FROM public.vnotes WHERE project = ANY (projects)) THEN
		PERFORM kizunasync.resync_bucket('public.vnotes', '{}');
	END IF;
	RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION vmembers_resync() FROM PUBLIC;
CREATE TRIGGER vmembers_resync AFTER INSERT OR UPDATE OR DELETE ON vmembers
	FOR EACH ROW EXECUTE FUNCTION vmembers_resync();
"""


class Failed(Exception):
    pass


def check_out(out, what):
    errs = [l for l in out if l.startswith(("ERROR", "FATAL", "psql:"))]
    if errs:
        raise Failed(f"{what}: {errs[:3]}")
    return out


class User:
    def __init__(self, sub):
        self.sub = sub
        self.s = Session(DB)
        check_out(self.s.query("SET client_min_messages = error;\n"
                               "SELECT set_config('request.jwt.claims', '%s', false) IS NULL;\n"
                               "SET ROLE authenticated;" % json.dumps({"sub": sub, "role": "authenticated"})),
                  "user session")

    def one(self, sql, tag, what):
        out = check_out(self.s.query(sql), what)
        got = [l for l in out if l.startswith(tag + "|")]
        if len(got) != 1:
            raise Failed(f"{what}: {out[:3]}")
        return got[0][len(tag) + 1:]


class Device:
    def __init__(self, name, user, rng):
        self.name = name
        self.user = user
        self.orgs = sorted(rng.sample(ORGS, rng.randint(1, len(ORGS))))
        self.status = "open" if rng.random() < 0.3 else None
        self.notes = rng.random() < 0.6
        self.notes_project = rng.choice(PROJECTS) if self.notes and rng.random() < 0.3 else None
        self.limit = rng.randint(1, 50)
        self.buckets = []
        for o in self.orgs:
            params = {"org": o}
            if self.status:
                params["status"] = self.status
            self.buckets.append({"table": "vdocs", "params": params})
        if self.notes:
            self.buckets.append({"table": "vnotes", "params": {"project": self.notes_project}}
                                if self.notes_project else {"table": "vnotes"})
        # registered, as the README asks of a client that pages through a
        # bootstrap: a bootstrap paused across a reap is then told so
        self.client_id = "00000000-0000-4000-8000-%012d" % (800 + int(name[1:]))
        self.cursor = "0"
        self.state = {}  # (table, pk) -> row document
        self.pages = self.entries = self.tombstones = self.expired = 0

    def describe(self):
        return (f"{self.name} (user {self.user.sub[-3:]}, limit {self.limit}, buckets "
                f"{json.dumps(self.buckets, separators=(',', ':'))})")

    def pull(self):
        """One page; returns has_more."""
        call = "SELECT 'P|' || kizunasync.pull('%s', '%s', 1, %d, '%s')::text;" % (
            json.dumps(self.buckets), self.cursor, self.limit, self.client_id)
        p = json.loads(self.user.one(call, "P", f"pull of {self.describe()} at cursor {self.cursor}"))
        self.pages += 1
        if p["signal"] is not None:
            if p["signal"]["type"] != "CHECKPOINT_EXPIRED":
                raise Failed(f"unexpected signal {p['signal']} for {self.describe()}")
            # the client drops its local state and bootstraps again
            self.expired += 1
            self.state = {}
            self.cursor = "0"
            return True
        if len(p["rows"]) + len(p["tombstones"]) > self.limit:
            raise Failed(f"page over the limit for {self.describe()}")
        entries = [(int(r["seq"]), r["table"], r["pk"], r["row"]) for r in p["rows"]] + \
                  [(int(t["seq"]), t["table"], t["pk"], None) for t in p["tombstones"]]
        for seq, table, pk, row in sorted(entries, key=lambda e: e[0]):
            if row is None:
                self.tombstones += 1
                self.state.pop((table, pk), None)
            else:
                self.state[(table, pk)] = row
        self.entries += len(entries)
        self.cursor = p["cursor"]
        return p["has_more"]

    def drain(self):
        for _ in range(20000):
            if not self.pull():
                return
        raise Failed(f"{self.describe()} never drained")

    def expected(self, cols):
        """What the user may SELECT, in the device's shape, from the user's own session."""
        want = {}
        docs = ("SELECT 'E|' || coalesce(jsonb_object_agg(x.id::text, to_jsonb(x)), '{}')::text"
                " FROM (SELECT %s FROM vdocs WHERE org = ANY (ARRAY[%s])%s) x;"
                % (", ".join(cols), ",".join(map(str, self.orgs)),
                   " AND status = '%s'" % self.status if self.status else ""))
        for pk, row in json.loads(self.user.one(docs, "E", "expected rows")).items():
            want[("vdocs", pk)] = row
        if self.notes:
            notes = ("SELECT 'E|' || coalesce(jsonb_object_agg(x.id::text, to_jsonb(x)), '{}')::text"
                     " FROM (SELECT id, project, v FROM vnotes%s) x;"
                     % (" WHERE project = %d" % self.notes_project if self.notes_project else ""))
            for pk, row in json.loads(self.user.one(notes, "E", "expected notes")).items():
                want[("vnotes", pk)] = row
        return want


class Fuzz:
    def __init__(self, seed, steps, check_every, remedy, writes_only, trace=False):
        self.seed = seed
        self.rng = random.Random(seed)
        self.steps = steps
        self.check_every = check_every
        self.remedy = remedy
        self.writes_only = writes_only
        self.trace = trace
        self.log = []  # the steps run, for the report
        self.counts = {}
        self.secret_readable = True
        self.checks = 0

    # ------------------------------------------------------------ writer
    def w(self, sql):
        check_out(self.admin.query(sql), f"step {len(self.log)}: {sql}")

    def val(self, sql):
        out = check_out(self.admin.query(sql), sql)
        return [l for l in out if l]

    def setup(self):
        subprocess.run(["dropdb", "--if-exists", DB], check=True, capture_output=True)
        subprocess.run(["createdb", DB], check=True)
        subprocess.run(psql_cmd(DB, "-f", os.path.join(ROOT, "test/setup/standins.sql")), check=True,
                       capture_output=True)
        run_sql(DB, SETUP + (REMEDY if self.remedy else ""))
        self.admin = Session(DB)
        self.w("SET client_min_messages = error;")
        rng = self.rng
        for p in PROJECTS:
            for u in USERS:
                if rng.random() < 0.5:
                    self.w(f"INSERT INTO vmembers VALUES ({p}, '{u}');")
        for k in range(1, KEYS // 2):
            self.w(self.doc_upsert(k))
        for k in range(1, 8):
            self.w(f"INSERT INTO vnotes VALUES ({k}, {rng.choice(PROJECTS)}, {rng.randint(0, 999)});")
        self.users = [User(u) for u in USERS]
        self.devices = [Device(f"d{i}", self.users[i // 2], random.Random(rng.random()))
                        for i in range(2 * len(USERS))]

    def doc_upsert(self, k):
        rng = self.rng
        org = "NULL" if rng.random() < 0.05 else rng.choice(ORGS)
        return ("INSERT INTO vdocs VALUES (%d, %s, %d, '%s', %s, '%s', %d, %d) ON CONFLICT (id) DO UPDATE SET"
                " org = excluded.org, project = excluded.project, status = excluded.status,"
                " private = excluded.private, owner_id = excluded.owner_id, v = excluded.v, secret = excluded.secret;"
                % (k, org, rng.choice(PROJECTS), rng.choice(["open", "closed"]),
                   "true" if rng.random() < 0.15 else "false", rng.choice(USERS),
                   rng.randint(0, 999), rng.randint(0, 999)))

    def resync_all(self):
        if not self.remedy:
            return
        self.w("SELECT kizunasync.resync_bucket('vdocs', jsonb_build_object('org', o))"
               " FROM unnest(ARRAY[1, 2, 3]) o;"
               "SELECT kizunasync.resync_bucket('vnotes', '{}');")

    def step(self):
        rng = self.rng
        k = rng.randint(1, KEYS)
        ops = [
            (20, "upsert", lambda: self.doc_upsert(k)),
            (10, "update v", lambda: f"UPDATE vdocs SET v = {rng.randint(0, 999)} WHERE id = {k};"),
            (8, "bucket move", lambda: "UPDATE vdocs SET org = %s WHERE id = %d;"
             % ("NULL" if rng.random() < 0.1 else rng.choice(ORGS), k)),
            (6, "project move", lambda: f"UPDATE vdocs SET project = {rng.choice(PROJECTS)} WHERE id = {k};"),
            (6, "delete", lambda: f"DELETE FROM vdocs WHERE id = {k};"),
            (4, "re-insert", self.reinsert),
            (3, "key change", lambda: self.key_change(k)),
            (3, "rolled-back move", lambda: f"BEGIN; UPDATE vdocs SET org = {rng.choice(ORGS)}, v = v + 1 "
             f"WHERE id = {k}; ROLLBACK;"),
            (5, "private flip", lambda: f"UPDATE vdocs SET private = NOT private WHERE id = {k};"),
            (4, "owner reassigned", lambda: f"UPDATE vdocs SET owner_id = '{rng.choice(USERS)}' WHERE id = {k};"),
            (4, "status flip", lambda: f"UPDATE vdocs SET status = CASE status WHEN 'open' THEN 'closed' "
             f"ELSE 'open' END WHERE id = {k};"),
            (6, "note write", self.note_write),
            (8, "membership", self.membership),
            (2, "column privilege", self.column_privilege),
            (2, "compact", lambda: "SELECT kizunasync.compact_changelog() IS NOT NULL AS compacted;"),
            (2, "reap", lambda: "UPDATE kizunasync.entries SET deleted_at = now() - interval '400 days'"
             " WHERE kind = 'd' AND seq IN (SELECT seq FROM kizunasync.tombstones ORDER BY seq LIMIT %d);"
             "SELECT kizunasync.reap_tombstones() IS NOT NULL AS reaped;" % rng.randint(1, 20)),
            (2, "vacuum", lambda: "VACUUM kizunasync.entries;"),
            (25, "pull", None),
        ]
        if self.writes_only:
            ops = [op for op in ops if op[1] not in ("membership", "column privilege")]
        total = sum(wt for wt, _, _ in ops)
        r = rng.uniform(0, total)
        for wt, name, make in ops:
            r -= wt
            if r <= 0:
                break
        self.counts[name] = self.counts.get(name, 0) + 1
        if name == "pull":
            d = rng.choice(self.devices)
            n = rng.randint(1, 3)
            self.log.append(f"pull {d.name} x{n}")
            for _ in range(n):
                if not d.pull():
                    break
            return
        sql = make()
        self.log.append(f"{name}: {sql}")
        if sql:
            self.w(sql)

    def reinsert(self):
        gone = self.val("SELECT g FROM generate_series(1, %d) g WHERE NOT EXISTS "
                        "(SELECT 1 FROM vdocs WHERE id = g) ORDER BY g;" % (2 * KEYS))
        return self.doc_upsert(int(self.rng.choice(gone))) if gone else None

    def key_change(self, k):
        gone = self.val("SELECT g FROM generate_series(1, %d) g WHERE NOT EXISTS "
                        "(SELECT 1 FROM vdocs WHERE id = g) ORDER BY g;" % (2 * KEYS))
        return f"UPDATE vdocs SET id = {self.rng.choice(gone)} WHERE id = {k};" if gone else None

    def note_write(self):
        rng = self.rng
        k = rng.randint(1, 10)
        if rng.random() < 0.2:
            return f"DELETE FROM vnotes WHERE id = {k};"
        return (f"INSERT INTO vnotes VALUES ({k}, {rng.choice(PROJECTS)}, {rng.randint(0, 999)})"
                " ON CONFLICT (id) DO UPDATE SET project = excluded.project, v = excluded.v;")

    def membership(self):
        rng = self.rng
        p, u = rng.choice(PROJECTS), rng.choice(USERS)
        if self.val(f"SELECT 1 FROM vmembers WHERE project = {p} AND user_id = '{u}';"):
            return f"DELETE FROM vmembers WHERE project = {p} AND user_id = '{u}';"
        return f"INSERT INTO vmembers VALUES ({p}, '{u}');"

    def column_privilege(self):
        if self.secret_readable:
            self.w("REVOKE SELECT ON vdocs FROM authenticated;"
                   "GRANT SELECT (%s) ON vdocs TO authenticated;" % ", ".join(c for c in DOC_COLS if c != "secret"))
        else:
            self.w("GRANT SELECT ON vdocs TO authenticated;")
        self.secret_readable = not self.secret_readable
        self.resync_all()
        return None

    # ------------------------------------------------------------ checks
    def check(self, when):
        cols = [c for c in DOC_COLS if c != "secret" or self.secret_readable]
        self.checks += 1
        bad = []
        for d in self.devices:
            d.drain()
            want = d.expected(cols)
            if d.state != want:
                diff = sorted(set(d.state) | set(want), key=lambda k: (k[0], int(k[1])))
                diff = [k for k in diff if d.state.get(k) != want.get(k)]
                bad.append(f"{d.describe()}: {len(diff)} rows differ, e.g. "
                           + "; ".join(f"{t} {pk}: device {json.dumps(d.state.get((t, pk)))} "
                                       f"may see {json.dumps(want.get((t, pk)))}" for t, pk in diff[:3]))
        if bad:
            raise Failed(f"after {when}, {len(bad)} of {len(self.devices)} devices differ from what "
                         "their users may SELECT:\n  " + "\n  ".join(bad)
                         + ("\nsteps:\n  " + "\n  ".join(self.log) if self.trace else ""))

    def run(self):
        self.setup()
        try:
            for i in range(1, self.steps + 1):
                self.step()
                if i % self.check_every == 0:
                    self.check(f"step {i}")
            self.check(f"the last step ({self.steps})")
        finally:
            self.admin.close()
            for u in self.users:
                u.s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, help="run this one seed (replays a reported failure)")
    ap.add_argument("--seeds", type=int, default=5, help="seeds to run, from a base taken from the clock")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--check-every", type=int, default=60)
    ap.add_argument("--no-remedy", action="store_true",
                    help="no trigger calling resync_bucket, no resync after a revoke: the run must fail")
    ap.add_argument("--writes-only", action="store_true",
                    help="no membership or column privilege changes: visibility changes only by writes")
    ap.add_argument("--trace", action="store_true", help="print the steps run with a failure")
    args = ap.parse_args()
    seeds = [args.seed] if args.seed is not None else [int(time.time()) % 1000000 * 10 + i
                                                      for i in range(args.seeds)]
    failed = 0
    for seed in seeds:
        t0 = time.time()
        f = Fuzz(seed, args.steps, args.check_every, not args.no_remedy, args.writes_only, args.trace)
        try:
            f.run()
            verdict = "PASS"
        except Failed as e:
            failed += 1
            verdict = f"FAIL: {e}\nvis_fuzz: replay: python3 test/tools/vis_fuzz.py --seed {seed} --steps {args.steps}" \
                      f" --check-every {args.check_every}" + (" --no-remedy" if args.no_remedy else "") \
                      + (" --writes-only" if args.writes_only else "")
        devs = getattr(f, "devices", [])
        print(f"vis_fuzz: seed {seed}: {args.steps} steps "
              f"({', '.join(f'{k} {v}' for k, v in sorted(f.counts.items()))}), {f.checks} checks, "
              f"{sum(d.pages for d in devs)} pages, {sum(d.entries for d in devs)} entries "
              f"({sum(d.tombstones for d in devs)} tombstones), "
              f"{sum(d.expired for d in devs)} CHECKPOINT_EXPIRED, {time.time() - t0:.1f} s: {verdict}")
    am = subprocess.run(["bash", os.path.join(ROOT, "test/tools/amcheck.sh"), DB], capture_output=True, text=True)
    for line in am.stdout.splitlines():
        if not line.startswith("ok "):
            print(line.replace("amcheck: ", "vis_fuzz: amcheck: ", 1))
    print(f"vis_fuzz: amcheck of the last seed's bookkeeping {'clean' if am.returncode == 0 else 'FAILED'}")
    print(f"vis_fuzz: {len(seeds) - failed} of {len(seeds)} seeds passed"
          + (" (--no-remedy)" if args.no_remedy else "") + (" (--writes-only)" if args.writes_only else ""))
    return 0 if failed == 0 and am.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
