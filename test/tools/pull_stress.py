#!/usr/bin/env python3
"""Randomized end-to-end stress test of kizunasync.pull (issue 4): pullers
that page through the real pull RPC, as authenticated users, while writers
upsert, move between buckets, delete, roll back and hold transactions open,
end with a replica equal to the table.

Writers come from test/tools/seq_stress.py (the same random transactions).
Each puller is its own user (JWT sub), names every bucket value (owner 1..5)
with a random small limit, applies rows and tombstones to a replica, and
keeps only the cursor the server returns.  With --subsets a puller names
only some bucket values, so rows moving out must reach it as tombstones;
--scan-cap N lowers settings.max_pull_scan so pages end at the scan cap.  When the writers are done each
puller drains (has_more false); its replica must equal the table.

  python3 test/tools/pull_stress.py [--writers 4] [--pullers 3] [--seconds 20]

Uses the PG* environment (scripts/devenv.sh) and a database it creates
(KZ_STRESS_DB, default kz_pull_stress).  Python stdlib only.  Exit status 0
when every replica matches.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seq_stress import Session, psql_cmd, run_sql, writer_script, ROOT  # noqa: E402

DB = os.environ.get("KZ_STRESS_DB", "kz_pull_stress")


def buckets(owners):
    return json.dumps([{"table": "stress", "params": {"owner": o}} for o in owners])


class Puller:
    def __init__(self, db, n, rng, limit, owners):
        self.s = Session(db)
        self.owners = owners
        self.buckets = buckets(owners)
        self.rng = rng
        self.limit = limit
        self.cursor = "0"
        self.replica = {}
        self.pages = 0
        self.entries = 0
        self.max_holes = 0
        sub = "00000000-0000-4000-8000-%012d" % (900 + n)
        self.s.query("SELECT set_config('request.jwt.claims', '%s', false);"
                     % json.dumps({"sub": sub, "role": "authenticated"}))
        self.s.query("SET ROLE authenticated;")

    def pull(self):
        out = self.s.query("SELECT 'P|' || kizunasync.pull('%s', '%s', 1, %d)::text;"
                           % (self.buckets, self.cursor, self.limit))
        page = [l for l in out if l.startswith("P|")]
        if len(page) != 1:
            raise RuntimeError(f"pull failed at cursor {self.cursor}: {out}")
        p = json.loads(page[0][2:])
        entries = [(int(r["seq"]), "u", r) for r in p["rows"]] + \
                  [(int(t["seq"]), "d", t) for t in p["tombstones"]]
        if len(entries) > self.limit:
            raise RuntimeError(f"page over the limit: {len(entries)} > {self.limit}")
        for seq, op, e in sorted(entries, key=lambda x: x[0]):
            if op == "u":
                self.replica[e["pk"]] = (str(e["row"]["owner"]), str(e["row"]["v"]))
            else:
                self.replica.pop(e["pk"], None)
        self.cursor = p["cursor"]
        self.max_holes = max(self.max_holes, self.cursor.count(".") + ("~" in self.cursor))
        self.pages += 1
        self.entries += len(entries)
        return p["has_more"], len(entries)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--pullers", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--subsets", action="store_true",
                    help="each puller names a random subset of the bucket values (moves out become tombstones)")
    ap.add_argument("--scan-cap", type=int, default=0, help="settings.max_pull_scan for the run")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print(f"pull_stress: seed {args.seed}, {args.writers} writers, {args.pullers} pullers, {args.seconds}s")

    subprocess.run(["dropdb", "--if-exists", DB], check=True)
    subprocess.run(["createdb", DB], check=True)
    subprocess.run(psql_cmd(DB, "-f", os.path.join(ROOT, "test/setup/standins.sql")), check=True,
                   capture_output=True)
    run_sql(DB, "CREATE EXTENSION kizunasync;"
                "CREATE TABLE stress (id integer PRIMARY KEY, owner integer, v integer);"
                "GRANT SELECT ON stress TO authenticated;"
                "INSERT INTO stress SELECT g, g % 5 + 1, 0 FROM generate_series(1, 50) g;"
                "SELECT kizunasync.sync_table('stress', bucket_column => 'owner');")
    if args.scan_cap:
        run_sql(DB, f"SELECT kizunasync.configure(max_pull_scan => {args.scan_cap}) IS NOT NULL AS configured;")

    writers = []
    for _ in range(args.writers):
        script = writer_script(random.Random(rng.random()), args.seconds, args.keys)
        writers.append(subprocess.Popen(psql_cmd(DB, "-v", "ON_ERROR_STOP=0"), stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True))
        threading.Thread(target=lambda w=writers[-1], s=script: (w.stdin.write(s), w.stdin.close()),
                         daemon=True).start()

    def owners():
        if not args.subsets:
            return list(range(1, 6))
        return sorted(rng.sample(range(1, 6), rng.randint(1, 4)))

    pullers = [Puller(DB, i, random.Random(rng.random()), limit=rng.choice([1, 3, 7, 20]), owners=owners())
               for i in range(args.pullers)]
    errors = []

    def pull_loop(p):
        try:
            while any(w.poll() is None for w in writers):
                p.pull()
                time.sleep(p.rng.uniform(0, 0.05))
            for _ in range(100000):
                more, n = p.pull()
                if not more:
                    break
            else:
                raise RuntimeError("puller never drained")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=pull_loop, args=(p,)) for p in pullers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w in writers:
        w.wait()
    if errors:
        print("pull_stress: FAIL:", errors[0])
        return 1

    table = {}
    for line in run_sql(DB, "SELECT id, owner, v FROM stress ORDER BY id").splitlines():
        i, o, v = line.split("|")
        table[i] = (o, v)
    changes = run_sql(DB, "SELECT last_value FROM kizunasync.change_seq").strip()
    ok = True
    for i, p in enumerate(pullers):
        want = {k: v for k, v in table.items() if int(v[0]) in p.owners}
        same = p.replica == want
        ok &= same
        diff = [k for k in set(p.replica) | set(want) if p.replica.get(k) != want.get(k)]
        print(f"pull_stress: puller {i} (limit {p.limit}, owners {p.owners}): {p.pages} pages, {p.entries} entries, "
              f"max holes {p.max_holes}, cursor {p.cursor}, replica {'==' if same else '!='} table"
              + ("" if same else f" ({len(diff)} keys differ, e.g. "
                                 + ", ".join(f"{k}: replica {p.replica.get(k)} table {want.get(k)}" for k in sorted(diff)[:5]) + ")"))
    print(f"pull_stress: {len(table)} rows, {changes} seqs drawn: {'PASS' if ok else 'FAIL'}")
    for p in pullers:
        p.s.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
