#!/usr/bin/env python3
"""Randomized sequencing stress test (issue 3): no committed change is ever
skipped by a cursor.

Several writers (psql processes running generated scripts: upserts, updates,
bucket moves, deletes; random rollbacks; transactions held open with
pg_sleep) run while several pullers page through the change stream with
small limits, keeping a replica each.  When the writers are done, every
puller drains its cursor (no holes left, an empty page) and its replica must
equal the table row by row.  Exit status 0 when every replica matches.

Until the pull RPC is merged the puller reads the bookkeeping as superuser:
one REPEATABLE READ transaction per page, kizunasync_test.horizon() for the
checkpoint token and the changelog/tombstones visible in the same snapshot.

Uses the PG* environment (scripts/devenv.sh) and a database it creates
(KZ_STRESS_DB, default kz_stress).  Python stdlib only.

  python3 test/tools/seq_stress.py [--writers 4] [--pullers 3] [--seconds 20]
"""
import argparse
import os
import random
import subprocess
import sys
import threading
import time

DB = os.environ.get("KZ_STRESS_DB", "kz_stress")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def psql_cmd(db, *extra):
    return ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, *extra]


def run_sql(db, sql):
    return subprocess.run(psql_cmd(db, "-c", sql), check=True, capture_output=True, text=True).stdout


class Session:
    """One psql process driven through a pipe; a query's output ends at a marker."""

    def __init__(self, db):
        self.p = subprocess.Popen(["psql", "-X", "-q", "-At", "-F", "|", "-v", "ON_ERROR_STOP=0", "-d", db],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, bufsize=1)

    def query(self, sql):
        self.p.stdin.write(sql + "\n\\echo __KZ_END__\n")
        self.p.stdin.flush()
        out = []
        for line in self.p.stdout:
            line = line.rstrip("\n")
            if line == "__KZ_END__":
                return out
            out.append(line)
        raise RuntimeError("psql session ended")

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def writer_script(rng, seconds, nkeys):
    """A psql script of random transactions lasting about `seconds`."""
    lines = ["SET client_min_messages = error;"]
    deadline_note = int(seconds * 40)  # roughly 40 transactions per second per writer
    for _ in range(deadline_note):
        lines.append("BEGIN;")
        for _ in range(rng.randint(1, 4)):
            k = rng.randint(1, nkeys)
            r = rng.random()
            if r < 0.45:
                lines.append(f"INSERT INTO stress VALUES ({k}, {rng.randint(1, 5)}, {rng.randint(0, 9999)}) "
                             f"ON CONFLICT (id) DO UPDATE SET v = excluded.v;")
            elif r < 0.65:
                lines.append(f"UPDATE stress SET v = {rng.randint(0, 9999)} WHERE id = {k};")
            elif r < 0.80:
                lines.append(f"UPDATE stress SET owner = {rng.randint(1, 5)} WHERE id = {k};")
            elif r < 0.95:
                lines.append(f"DELETE FROM stress WHERE id = {k};")
            else:
                lines.append(f"UPDATE stress SET v = v WHERE id = {k};")  # no-op update
        if rng.random() < 0.15:
            lines.append(f"SELECT pg_sleep({rng.uniform(0.02, 0.3):.3f});")  # held open
        lines.append("ROLLBACK;" if rng.random() < 0.2 else "COMMIT;")
    return "\n".join(lines) + "\n"


def parse_cursor(tok):
    hw, _, holes = tok.partition("~")
    return int(hw), [int(h) for h in holes.split(".")] if holes else []


def fmt_cursor(hw, holes):
    return str(hw) + ("~" + ".".join(map(str, holes)) if holes else "")


class Puller:
    def __init__(self, db, rng, limit, drop_holes=False):
        self.drop_holes = drop_holes
        self.s = Session(db)
        self.rng = rng
        self.limit = limit
        self.cursor = "0"
        self.replica = {}
        self.pages = 0
        self.max_holes_seen = 0

    def pull(self):
        in_hw, in_holes = parse_cursor(self.cursor)
        holes_sql = "ARRAY[" + ",".join(map(str, in_holes)) + "]::bigint[]"
        out = self.s.query(
            "BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
            f"SELECT 'T', kizunasync_test.horizon('{self.cursor}', 64);\n")
        tok = [l for l in out if l.startswith("T|")]
        if len(tok) != 1:
            raise RuntimeError(f"horizon failed: {out}")
        token = tok[0][2:]
        if self.drop_holes:
            token = token.split("~")[0]
        hw, holes = parse_cursor(token)
        rows = self.s.query(
            "SELECT 'R', seq, op, pk, owner, v FROM ("
            " SELECT c.seq, 'u' AS op, c.pk, s.owner, s.v FROM kizunasync.changelog c"
            "   JOIN stress s ON s.id::text = c.pk"
            f"  WHERE c.table_name = 'stress' AND ((c.seq > {in_hw} AND c.seq <= {hw}) OR c.seq = ANY ({holes_sql}))"
            " UNION ALL"
            " SELECT t.seq, 'd', t.pk, NULL, NULL FROM kizunasync.tombstones t"
            f"  WHERE t.table_name = 'stress' AND ((t.seq > {in_hw} AND t.seq <= {hw}) OR t.seq = ANY ({holes_sql}))"
            ") x ORDER BY seq;\nCOMMIT;")
        entries = []
        for l in rows:
            if l.startswith("R|"):
                _, seq, op, pk, owner, v = l.split("|")
                entries.append((int(seq), op, pk, owner, v))
            elif l and l not in ("BEGIN", "COMMIT"):
                raise RuntimeError(f"pull failed: {l}")
        # page: resolved holes always, then range entries up to the limit
        from_holes = [e for e in entries if e[0] <= in_hw]
        ranged = [e for e in entries if e[0] > in_hw]
        if len(ranged) > self.limit:
            ranged = ranged[:self.limit]
            p = ranged[-1][0]
            token = fmt_cursor(p, [h for h in holes if h < p])
        for seq, op, pk, owner, v in sorted(from_holes + ranged):
            if op == "u":
                self.replica[pk] = (owner, v)
            else:
                self.replica.pop(pk, None)
        self.max_holes_seen = max(self.max_holes_seen, len(parse_cursor(token)[1]))
        new_hw, _ = parse_cursor(token)
        if new_hw < in_hw:
            raise RuntimeError(f"cursor went backwards: {self.cursor} -> {token}")
        self.cursor = token
        self.pages += 1
        return len(from_holes) + len(ranged)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--pullers", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--drop-holes", action="store_true",
                    help="negative control: pullers forget holes (skips late commits); must FAIL")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print(f"seq_stress: seed {args.seed}, {args.writers} writers, {args.pullers} pullers, {args.seconds}s")

    subprocess.run(["dropdb", "--if-exists", DB], check=True)
    subprocess.run(["createdb", DB], check=True)
    subprocess.run(psql_cmd(DB, "-f", os.path.join(ROOT, "test/setup/standins.sql")), check=True,
                   capture_output=True)
    run_sql(DB, "CREATE EXTENSION kizunasync; CREATE EXTENSION kizunasync_test;"
                "CREATE TABLE stress (id integer PRIMARY KEY, owner integer, v integer);"
                "INSERT INTO stress SELECT g, g % 5 + 1, 0 FROM generate_series(1, 50) g;"
                "SELECT kizunasync.sync_table('stress', bucket_column => 'owner', wakeup => false);")

    writers = []
    for i in range(args.writers):
        script = writer_script(random.Random(rng.random()), args.seconds, args.keys)
        writers.append(subprocess.Popen(psql_cmd(DB, "-v", "ON_ERROR_STOP=0"), stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True))
        threading.Thread(target=lambda w=writers[-1], s=script: (w.stdin.write(s), w.stdin.close()),
                         daemon=True).start()

    pullers = [Puller(DB, random.Random(rng.random()), limit=rng.choice([3, 7, 20]),
                      drop_holes=args.drop_holes) for _ in range(args.pullers)]
    errors = []

    def pull_loop(p):
        try:
            while any(w.poll() is None for w in writers):
                p.pull()
                time.sleep(p.rng.uniform(0, 0.05))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=pull_loop, args=(p,)) for p in pullers]
    for t in threads:
        t.start()
    for w in writers:
        w.wait()
    for t in threads:
        t.join()
    if errors:
        print(f"seq_stress: FAILED: {errors[0]}")
        return 1

    table = {}
    for line in run_sql(DB, "SELECT id, owner, v FROM stress ORDER BY id").splitlines():
        i, o, v = line.split("|")
        table[i] = (o, v)
    ok = True
    for n, p in enumerate(pullers):
        # drain: until no holes remain and a page delivers nothing
        for _ in range(10000):
            got = p.pull()
            if got == 0 and "~" not in p.cursor:
                break
        diff = {k for k in set(table) | set(p.replica) if table.get(k) != p.replica.get(k)}
        print(f"puller {n}: limit {p.limit}, {p.pages} pages, cursor {p.cursor}, "
              f"max holes in a cursor {p.max_holes_seen}, {len(p.replica)} rows, "
              f"{'matches the table' if not diff else 'DIFFERS on ' + str(sorted(diff)[:10])}")
        ok = ok and not diff
        p.s.close()
    print(f"table: {len(table)} rows; sequence at {run_sql(DB, 'SELECT last_value FROM kizunasync.change_seq').strip()}")
    print("seq_stress: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
