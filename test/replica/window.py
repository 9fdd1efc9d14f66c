#!/usr/bin/env python3
"""The dangerous window on a hot standby (issue 15), deterministically.

A standby replays a prefix of the primary's WAL.  A pull there must never
claim a seq whose change it cannot see yet and would later miss: a seq drawn
but not yet inserted, an entry whose index entries are half replayed, a
commit not yet replayed.  Writers enter the numbering section one at a time
(Invariant S, decisions/0010), so seq order is the WAL order of the entry
inserts, and a pull needs no lock.

Part A freezes replay with pg_wal_replay_pause() at chosen points: a writer
that has drawn its seq and not inserted its entry (the test-only wait point
kizunasync_test.wait_after_draw), a later writer that wants the next seq
(it must wait for the section), the later writer committed while the first
is still open, the first committed on the primary but not replayed.  At each
point a device pulls on the standby; nothing may be skipped, and the cursors
are the exact ones the argument predicts.

Part B stops replay just before every WAL record of a short history (two
writers, one held open across the other's commit, and a delete), one record
at a time (recovery_target_lsn with a standby restart each), pulls from the
same checkpoint at each stop, and at the end drains every such device on the
fully replayed standby: each must equal the table.  A cursor that claimed a
seq it could not see would leave its device without that change.

Part C does the same for numbering at commit (issue 21 item 1: a
transaction numbers its first kizunasync.write_time_changes changes at
write time, the rest in its XACT_EVENT_PRE_COMMIT, through the same
section).  A writer over its budget (2 of 6 changes, the rest in its
store), idle in transaction: a standby pull and a READ ONLY primary pull
deliver another session's commit with the writer's 2 seqs as holes and
nothing of it claimed (C3).  Frozen after the first draw of its commit
(wait_after_draw fires there too), a third writer waits for the section
(C5), and with replay at, then paused before, the commit's entries nothing
new is claimed (C6, C7); once replayed, everything, with the exact cursor
(C8).  Then part B's walk over the records from such a commit on (a
write-time change held open across another writer's commit, a delete and
an insert numbered at commit while a third writer waits for the section):
every stop's cursor and page are the ones its replayed commit records
predict (CW2) and every device drains equal to the table (CW3).  With the
commit-time chunk's seqs drawn before the section (a deliberately broken
build) C5-C9 and CW0, CW2, CW3 fail: the waiting writer draws and commits
past the frozen one, and its seq is claimed while the frozen seq is not a
hole, so the device loses a change.

On the code before issue 15 it fails: the later writer draws and commits
while the first is frozen (check A3), and the standby refuses every pull
with 55000 "cannot acquire lock mode ShareLock on database objects while
recovery is in progress".

Needs the cluster (PG* environment), the standby (test/replica/standby.sh),
KZ_RUNDIR and PG_CONFIG; runs as root (pg_ctl and pg_waldump as postgres).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replib import (Failed, Session, SqlError, Tap, fresh_db, one, psql, pull,  # noqa: E402
                    standby_restart, wait_replayed, wal_records)

DB = "kz_replica_window"
SUB = "00000000-0000-4000-8000-a10000000151"
BUCKETS = [{"table": "win", "params": {"grp": 1}}]
KEY = 515151
SETUP = """
CREATE EXTENSION kizunasync;
CREATE EXTENSION kizunasync_test;
SELECT kizunasync_test.set_numbering(0);
CREATE TABLE win (id integer PRIMARY KEY, grp integer NOT NULL, v integer NOT NULL);
GRANT SELECT ON win TO authenticated;
INSERT INTO win SELECT g, 1, 0 FROM generate_series(1, 6) g;
SELECT kizunasync.sync_table('win', bucket_column => 'grp', wakeup => false);
SELECT kizunasync.configure(pull_wait_ms => 0) IS NOT NULL;
"""


class Device:
    def __init__(self, cursor="0", replica=None):
        self.cursor = cursor
        self.replica = dict(replica or {})

    def apply(self, page):
        for r in page["rows"]:
            self.replica[r["pk"]] = r["row"]["v"]
        for t in page["tombstones"]:
            self.replica.pop(t["pk"], None)
        self.cursor = page["cursor"]
        return page

    def pull(self, standby=True, read_only=False):
        """One page as a client of the replica makes it: KZL03 -> the primary."""
        try:
            return self.apply(pull(DB, SUB, BUCKETS, self.cursor, standby=standby, read_only=read_only))
        except SqlError as e:
            if e.sqlstate != "KZL03":
                raise
            return self.apply(pull(DB, SUB, BUCKETS, self.cursor))

    def drain(self, standby=True):
        for _ in range(100):
            if not self.pull(standby)["has_more"]:
                return
        raise Failed("device never drained (cursor %s)" % self.cursor)


def table():
    return {r[0]: int(r[1]) for r in psql(DB, "SELECT id, v FROM win WHERE grp = 1 ORDER BY id")}


def pages(p):
    return [(r["pk"], r["row"]["v"]) for r in p["rows"]] + [(t["pk"], "deleted") for t in p["tombstones"]]


def waiting_on(pid):
    """(locktype, mode) of the heavyweight lock backend pid waits for, or None."""
    rows = psql(DB, "SELECT locktype, mode FROM pg_locks WHERE pid = %d AND NOT granted" % pid)
    return tuple(rows[0]) if rows else None


def wait_event(pid):
    """wait_event_type:wait_event of backend pid (the section is a buffer
    content lock: LWLock:BufferContent)."""
    return one(DB, "SELECT coalesce(wait_event_type, '') || ':' || coalesce(wait_event, '')"
                   " FROM pg_stat_activity WHERE pid = %d" % pid)


def wait_until(what, fn, timeout=30):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = fn()
        if v:
            return v
        time.sleep(0.02)
    raise Failed("timed out waiting for " + what)


def drain_devices(devices):
    """Drain every (lsn, desc, device) on the fully replayed standby; the
    devices that do not end equal to the table, described."""
    want = table()
    lost = []
    for lsn, desc, d in devices:
        claimed = d.cursor
        d.drain()
        if d.replica != want:
            lost.append("stopped before %s (%s): cursor %s, then %s" % (lsn, desc, claimed, d.replica))
    return lost


def replay_pause(pause):
    psql("postgres", "SELECT pg_wal_replay_%s()" % ("pause" if pause else "resume"), standby=True)
    if pause:
        wait_until("replay paused", lambda: one("postgres", "SELECT pg_get_wal_replay_pause_state()",
                                                standby=True) == "paused")


def part_a(tap):
    dev = Device()
    dev.drain(standby=False)              # the first page records the grant: on the primary
    wait_replayed(DB)
    c0 = dev.cursor
    tap.same(dev.pull()["cursor"], c0, "A1 standby: a caught-up device stays at %s" % c0)

    lock, w1, w2 = Session(DB), Session(DB), Session(DB)
    try:
        lock.query("SELECT pg_advisory_lock(%d);" % KEY)
        w1.query("SELECT kizunasync_test.wait_after_draw(%d);" % KEY)
        w1pid, w2pid = w1.pid(), w2.pid()
        w1.send("BEGIN; UPDATE win SET v = 1 WHERE id = 1;")
        wait_until("w1 frozen after its draw", lambda: waiting_on(w1pid))
        s = int(one(DB, "SELECT last_value FROM kizunasync.change_seq"))
        tap.same(waiting_on(w1pid), ("advisory", "ShareLock"),
                 "A2 w1 drew seq %d and is frozen before inserting its entry" % s)

        w2.send("BEGIN; UPDATE win SET v = 2 WHERE id = 2; COMMIT;")
        time.sleep(0.3)
        tap.ok(wait_event(w2pid) == "LWLock:BufferContent"
               and int(one(DB, "SELECT last_value FROM kizunasync.change_seq")) == s,
               "A3 w2 cannot draw seq %d: it waits for the numbering section" % (s + 1),
               "w2 %s, last_value %s" % (wait_event(w2pid), one(DB, "SELECT last_value FROM kizunasync.change_seq")))

        wait_replayed(DB)
        p = dev.pull()
        tap.ok(p["cursor"] == c0 and not pages(p),
               "A4 standby, w1 drawn not inserted: nothing claimed (cursor %s)" % c0, p)
        p = Device(c0).pull(standby=False, read_only=True)
        tap.ok(p["cursor"] == c0 and not pages(p), "A4 primary, READ ONLY: the same page", p)

        replay_pause(True)
        lock.query("SELECT pg_advisory_unlock(%d);" % KEY)
        w1.wait()
        w2.wait()
        flush_lsn = one(DB, "SELECT pg_current_wal_lsn()")
        p = dev.pull()
        tap.ok(p["cursor"] == c0 and not pages(p),
               "A5 standby paused before w1's insert and w2's commit: still nothing claimed", p)

        replay_pause(False)
        wait_replayed(DB, flush_lsn)
        replay_pause(True)
        p = dev.pull()
        tap.same((p["cursor"], pages(p)), ("%d~%d" % (s + 1, s), [("2", 2)]),
                 "A6 standby at w2's commit, w1 open: w2's row, w1's seq a hole")

        w1.query("COMMIT;")
        p = dev.pull()
        tap.same((p["cursor"], pages(p), p["has_more"]), ("%d~%d" % (s + 1, s), [], True),
                 "A7 standby paused before w1's commit: the hole stays a hole")

        replay_pause(False)
        wait_replayed(DB)
        p = dev.pull()
        tap.same((p["cursor"], pages(p)), (str(s + 1), [("1", 1)]),
                 "A8 standby after w1's commit: w1's row, the hole resolved")
    finally:
        if one("postgres", "SELECT pg_get_wal_replay_pause_state()", standby=True) != "not paused":
            replay_pause(False)
        for ses in (lock, w1, w2):
            ses.close()
    dev.drain()
    tap.same(dev.replica, table(), "A9 the device equals the table")
    return dev


def part_b(tap, base):
    wait_replayed(DB)
    psql(DB, "CHECKPOINT")
    wait_replayed(DB)
    psql("postgres", "CHECKPOINT", standby=True)      # a restartpoint: restarts replay little
    replay_pause(True)
    start = one(DB, "SELECT pg_current_wal_insert_lsn()")
    w1, w2 = Session(DB), Session(DB)
    try:
        w1.query("BEGIN; UPDATE win SET v = 30 WHERE id = 3;")
        w2.query("BEGIN; UPDATE win SET v = 40 WHERE id = 4; COMMIT;")
        psql(DB, "DELETE FROM win WHERE id = 5")
        w1.query("COMMIT;")
    finally:
        w1.close()
        w2.close()
    end = one(DB, "SELECT pg_current_wal_insert_lsn()")
    psql(DB, "SELECT txid_current()")
    records = wal_records(start, end)
    tap.ok(len(records) >= 10, "B0 the history wrote %d WAL records" % len(records))
    devices = []
    try:
        for lsn, desc in records + [(end, "end")]:
            standby_restart(lsn)
            d = Device(base.cursor, base.replica)
            p = d.pull()
            print("#   stopped before %s %-40s cursor %-8s %s" % (lsn, desc[:40], d.cursor, pages(p)))
            devices.append((lsn, desc, d))
    finally:
        standby_restart(None)
    wait_replayed(DB)
    cursors = [d.cursor for _, _, d in devices]
    tap.ok(len(set(cursors)) >= 3 and any("~" in c for c in cursors),
           "B1 the stops saw the history unfold: %d distinct cursors, %d with holes"
           % (len(set(cursors)), sum("~" in c for c in cursors)), cursors)
    lost = drain_devices(devices)
    tap.ok(not lost, "B2 replay stopped before each of %d WAL records: every device drains equal to the table"
           % len(devices), "\n".join(lost))


def seq_now():
    return int(one(DB, "SELECT last_value FROM kizunasync.change_seq"))


def section_or_drawn(pid, drawn, timeout=5):
    """Until writer pid waits for the numbering section (or, on a build
    that lets it pass, has drawn a seq above drawn), at most timeout s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if wait_event(pid) == "LWLock:BufferContent" or seq_now() > drawn:
            time.sleep(0.05)
            return
        time.sleep(0.02)


def part_c(tap, base):
    """Commit-time numbering (issue 21 item 1) on the standby: a writer over
    its write-time budget idle in transaction, then frozen inside the
    numbering its commit does."""
    wait_replayed(DB)
    dev = Device(base.cursor, base.replica)
    dev.drain()
    s = seq_now()
    tap.same(dev.cursor, str(s), "C1 standby: a caught-up device at the sequence's last value %d" % s)
    c1 = "%d~%d.%d" % (s + 3, s + 1, s + 2)
    w1_rows = [("1", 101), ("2", 102), ("3", 103), ("20", 120), ("21", 121), ("6", "deleted")]

    lock, w1, w2, w3 = Session(DB), Session(DB), Session(DB), Session(DB)
    try:
        w1pid, w3pid = w1.pid(), w3.pid()
        # a budget of 2 and a capture batch of 2: two changes numbered at
        # write time, four kept for the commit (in the transaction's store)
        w1.query("BEGIN; SET LOCAL kizunasync.write_time_changes = 2; SET LOCAL kizunasync.capture_batch = 2;"
                 " UPDATE win SET v = 100 + id WHERE id IN (1, 2, 3);"
                 " INSERT INTO win VALUES (20, 1, 120), (21, 1, 121); DELETE FROM win WHERE id = 6;")
        tap.same(seq_now(), s + 2, "C2 w1 (6 changes, budget 2) idle in transaction: it drew 2 seqs, %d and %d"
                 % (s + 1, s + 2))
        w2.query("UPDATE win SET v = 7 WHERE id = 4;")
        wait_replayed(DB)
        p = dev.pull()
        tap.same((p["cursor"], pages(p)), (c1, [("4", 7)]),
                 "C3 standby, w1 idle: w2's committed row delivered, w1's 2 seqs holes, nothing of w1 claimed")
        p = Device(str(s), base.replica).pull(standby=False, read_only=True)
        tap.same((p["cursor"], pages(p)), (c1, [("4", 7)]), "C3 primary, READ ONLY: the same page")

        w1.query("SELECT kizunasync_test.wait_after_draw(%d);" % (KEY + 1))
        lock.query("SELECT pg_advisory_lock(%d);" % (KEY + 1))
        w1.send("COMMIT;")
        wait_until("w1 frozen after its first commit-time draw", lambda: waiting_on(w1pid))
        tap.same((waiting_on(w1pid), seq_now()), (("advisory", "ShareLock"), s + 4),
                 "C4 w1 committing drew seq %d, the first of its 4 commit-time seqs, and is frozen"
                 " before inserting its entry" % (s + 4))
        w3.send("UPDATE win SET v = 8 WHERE id = 4;")
        section_or_drawn(w3pid, s + 4)
        tap.ok(wait_event(w3pid) == "LWLock:BufferContent" and seq_now() == s + 4,
               "C5 w3 cannot draw seq %d: it waits for the numbering section w1's commit holds" % (s + 5),
               "w3 %s, last_value %s" % (wait_event(w3pid), seq_now()))

        wait_replayed(DB)
        p = dev.pull()
        tap.same((p["cursor"], pages(p)), (c1, []),
                 "C6 standby, w1 frozen in its commit-time numbering: nothing new claimed (cursor %s)" % c1)
        p = Device(c1).pull(standby=False, read_only=True)
        tap.same((p["cursor"], pages(p)), (c1, []), "C6 primary, READ ONLY: the same page")

        replay_pause(True)
        lock.query("SELECT pg_advisory_unlock(%d);" % (KEY + 1))
        w1.wait()
        w3.wait()
        p = dev.pull()
        tap.same((p["cursor"], pages(p)), (c1, []),
                 "C7 standby paused before w1's commit-time entries and w3's: nothing new claimed")
        replay_pause(False)
        wait_replayed(DB)
        p = dev.pull()
        tap.same((p["cursor"], sorted(pages(p), key=str)), (str(s + 8), sorted(w1_rows + [("4", 8)], key=str)),
                 "C8 standby after both commits: w1's 6 changes and w3's row, the holes resolved")
    finally:
        if one("postgres", "SELECT pg_get_wal_replay_pause_state()", standby=True) != "not paused":
            replay_pause(False)
        for ses in (lock, w1, w2, w3):
            ses.close()
    dev.drain()
    tap.same(dev.replica, table(), "C9 the device equals the table")
    return dev


def lsn_int(lsn):
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def part_c_walk(tap, base):
    """Part B's walk over a history whose last writer numbers at commit
    while another waits for the section: replay stopped before every WAL
    record from that commit on."""
    wait_replayed(DB)
    psql(DB, "CHECKPOINT")
    wait_replayed(DB)
    psql("postgres", "CHECKPOINT", standby=True)
    replay_pause(True)
    s = seq_now()
    lock, w1, w2, w3 = Session(DB), Session(DB), Session(DB), Session(DB)
    try:
        w1.query("BEGIN; SET LOCAL kizunasync.write_time_changes = 1; UPDATE win SET v = 201 WHERE id = 1;")
        x1 = int(w1.query("SELECT txid_current();")[0])
        w2.query("UPDATE win SET v = 202 WHERE id = 2;")
        w1.query("DELETE FROM win WHERE id = 20; INSERT INTO win VALUES (22, 1, 222);"
                 " SELECT kizunasync_test.wait_after_draw(%d);" % (KEY + 2))
        lock.query("SELECT pg_advisory_lock(%d);" % (KEY + 2))
        w1pid = w1.pid()
        mid = one(DB, "SELECT pg_current_wal_insert_lsn()")
        w1.send("COMMIT;")
        wait_until("w1 frozen after its first commit-time draw", lambda: waiting_on(w1pid))
        w3pid = w3.pid()
        w3.send("BEGIN; SELECT txid_current(); UPDATE win SET v = 204 WHERE id = 4; COMMIT;")
        section_or_drawn(w3pid, s + 3)
        lock.query("SELECT pg_advisory_unlock(%d);" % (KEY + 2))
        w1.wait()
        x3 = int(w3.wait()[0])
    finally:
        for ses in (lock, w1, w2, w3):
            ses.close()
    end = one(DB, "SELECT pg_current_wal_insert_lsn()")
    psql(DB, "SELECT txid_current()")
    seqs = psql(DB, "SELECT pk, seq FROM kizunasync.changelog WHERE table_name = 'win' AND seq > %d"
                " UNION ALL SELECT pk || '-', seq FROM kizunasync.tombstones"
                " WHERE table_name = 'win' AND seq > %d ORDER BY 2" % (s, s))
    tap.same([tuple(r) for r in seqs],
             [("1", str(s + 1)), ("2", str(s + 2)), ("20-", str(s + 3)), ("22", str(s + 4)), ("4", str(s + 5))],
             "CW0 w1 numbered its first change at write time (%d), its delete and insert at commit (%d, %d),"
             " after w2 (%d) and before w3 (%d), which waited for the section" % (s + 1, s + 3, s + 4, s + 2, s + 5))
    records = wal_records(mid, end, with_tx=True)
    commits = {tx: lsn_int(lsn) for lsn, d, tx in records if d.startswith("Transaction COMMIT")}
    tap.ok(x1 in commits and x3 in commits and sum(d.startswith("Heap INSERT") for _, d, _ in records) >= 3,
           "CW1 w1's commit and w3 wrote %d WAL records (3 entries, 2 commits; w%d's commit first)"
           % (len(records), 1 if commits.get(x1, 0) < commits.get(x3, 0) else 3),
           "\n".join("%s %s tx %d" % r for r in records))
    expect = {
        (False, False): ("%d~%d" % (s + 2, s + 1), [("2", 202)]),
        (True, False): (str(s + 4), [("1", 201), ("2", 202), ("20", "deleted"), ("22", 222)]),
        (False, True): ("%d~%d.%d.%d" % (s + 5, s + 1, s + 3, s + 4), [("2", 202), ("4", 204)]),
        (True, True): (str(s + 5), [("1", 201), ("2", 202), ("20", "deleted"), ("22", 222), ("4", 204)]),
    }
    devices, wrong = [], []
    try:
        for lsn, desc in [r[:2] for r in records] + [(end, "end")]:
            standby_restart(lsn)
            d = Device(base.cursor, base.replica)
            p = d.pull()
            print("#   stopped before %s %-40s cursor %-8s %s" % (lsn, desc[:40], d.cursor, pages(p)))
            state = (commits.get(x1, 1 << 64) < lsn_int(lsn), commits.get(x3, 1 << 64) < lsn_int(lsn))
            want = (expect[state][0], sorted(expect[state][1], key=str))
            got = (d.cursor, sorted(pages(p), key=str))
            if got != want:
                wrong.append("stopped before %s (%s): got %r, want %r" % (lsn, desc, got, want))
            devices.append((lsn, desc, d))
    finally:
        standby_restart(None)
    tap.ok(not wrong, "CW2 each of %d stops answers the cursor its replayed commits predict"
           " (nothing claimed that is not committed in the replayed WAL)" % len(devices), "\n".join(wrong))
    wait_replayed(DB)
    lost = drain_devices(devices)
    tap.ok(not lost, "CW3 replay stopped before each of %d WAL records of a commit-time numbering and a"
           " writer that waited for it: every device drains equal to the table" % len(devices), "\n".join(lost))


def main():
    tap = Tap("replica window")
    try:
        fresh_db(DB, SETUP)
        dev = part_a(tap)
        part_b(tap, dev)
        t0 = time.monotonic()
        dev = part_c(tap, dev)
        part_c_walk(tap, dev)
        print("# part C took %.1f s" % (time.monotonic() - t0))
    except (Failed, SqlError) as e:
        tap.ok(False, "the test ran to its end", e)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
