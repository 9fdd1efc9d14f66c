#!/usr/bin/env python3
"""Pulls on a hot standby (issue 15, decisions/0085): what the standby must
answer as the primary does, and what it must refuse (KZL03) because only the
primary can answer it.

  C1  signals: CHECKPOINT_EXPIRED after a reap on the primary, RESET_REQUIRED
      after min_schema_version rose: the same pages on the standby as on the
      primary (READ ONLY)
  C2  the long poll (decisions/0083) works in recovery: a pull that can make
      no progress waits pull_wait_ms; one whose hole commits on the primary
      meanwhile returns the row as soon as the standby replays the commit
  C3  a cursor from the primary that the standby has not replayed: the
      standby waits for replay up to pull_wait_ms, then answers KZL03
      (never CHECKPOINT_EXPIRED, never a page); after replay it answers
  C4  a hole whose entry the standby has not replayed, under a cursor the
      standby cannot tell from its own future: kept, never dropped
  C5  a grant the standby has not replayed, with a tombstone of that bucket
      in the page's range: KZL03, not a page that passes the tombstone
  C6  a registered client: its bootstrap (recorded on the primary) and its
      delta pulls run on the standby, the registry untouched
  C7  the same as C5 for a change the caller may not see (its row hidden by
      RLS; a tombstone for a grant holder since issue 32): KZL03, not a
      page that passes it; once the grant is replayed, the standby's page
      is the primary's (the tombstone)

On the code before issue 15 every pull on the standby fails with 55000
(ShareLock during recovery).  Needs the cluster (PG* environment) and the
standby (test/replica/standby.sh).
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replib import (Failed, Session, SqlError, Tap, fresh_db, one, psql, pull,  # noqa: E402
                    wait_replayed)

DB = "kz_replica_checks"
UA = "00000000-0000-4000-8000-a10000000161"
UB = "00000000-0000-4000-8000-a10000000162"
UC = "00000000-0000-4000-8000-a10000000163"
CLIENT = "00000000-0000-4000-8000-c10000000161"
B1 = [{"table": "items", "params": {"owner": 1}}]
B2 = [{"table": "items", "params": {"owner": 2}}]
NOTES = [{"table": "notes"}]
V1 = [{"table": "vis", "params": {"owner": 1}}]
SETUP = """
CREATE EXTENSION kizunasync;
CREATE EXTENSION kizunasync_test;
SELECT kizunasync_test.set_numbering(0);
CREATE TABLE items (id integer PRIMARY KEY, owner integer NOT NULL, v integer NOT NULL);
GRANT SELECT ON items TO authenticated;
INSERT INTO items SELECT g, 1 + g % 2, 0 FROM generate_series(1, 20) g;
SELECT kizunasync.sync_table('items', bucket_column => 'owner', wakeup => false);
CREATE TABLE notes (id integer PRIMARY KEY, v text);
GRANT SELECT ON notes TO authenticated;
INSERT INTO notes VALUES (1, 'one');
SELECT kizunasync.sync_table('notes', register_clients => true, wakeup => false);
CREATE TABLE vis (id integer PRIMARY KEY, owner integer NOT NULL, hidden boolean NOT NULL DEFAULT false);
ALTER TABLE vis ENABLE ROW LEVEL SECURITY;
CREATE POLICY shown ON vis FOR SELECT TO authenticated USING (NOT hidden);
GRANT SELECT ON vis TO authenticated;
INSERT INTO vis SELECT g, 1, false FROM generate_series(1, 4) g;
SELECT kizunasync.sync_table('vis', bucket_column => 'owner', wakeup => false);
SELECT kizunasync.configure(pull_wait_ms => 0) IS NOT NULL;
"""


def rw(sub, buckets, cursor, **kw):
    return pull(DB, sub, buckets, cursor, **kw)


def ro(sub, buckets, cursor, **kw):
    return pull(DB, sub, buckets, cursor, read_only=True, **kw)


def sb(sub, buckets, cursor, **kw):
    return pull(DB, sub, buckets, cursor, standby=True, **kw)


def error_of(fn):
    try:
        fn()
    except SqlError as e:
        return e.sqlstate, e.message
    return None


def entries(p):
    return sorted([r["pk"] for r in p["rows"]]) + sorted(["-" + t["pk"] for t in p["tombstones"]])


def replay_pause(pause):
    psql("postgres", "SELECT pg_wal_replay_%s()" % ("pause" if pause else "resume"), standby=True)
    t0 = time.monotonic()
    while pause and one("postgres", "SELECT pg_get_wal_replay_pause_state()", standby=True) != "paused":
        if time.monotonic() - t0 > 30:
            raise Failed("replay did not pause")
        time.sleep(0.02)


def configure_wait(ms):
    psql(DB, "SELECT kizunasync.configure(pull_wait_ms => %d) IS NOT NULL" % ms)
    wait_replayed(DB)


def c1_signals(tap):
    c = rw(UA, B1, "0")["cursor"]
    psql(DB, "DELETE FROM items WHERE id = 1")
    psql(DB, "UPDATE kizunasync.entries SET deleted_at = now() - interval '40 days' WHERE kind = 'd'")
    psql(DB, "SELECT kizunasync.reap_tombstones()")
    wait_replayed(DB)
    a, b = ro(UA, B1, c), sb(UA, B1, c)
    tap.ok(a == b and (b["signal"] or {}).get("type") == "CHECKPOINT_EXPIRED",
           "C1 a cursor the reap passed: CHECKPOINT_EXPIRED on the standby as on the primary", (a, b))
    psql(DB, "SELECT kizunasync.sync_table('items', bucket_column => 'owner', wakeup => false,"
             " min_schema_version => 2) IS NOT NULL")
    wait_replayed(DB)
    a, b = ro(UA, B1, "0"), sb(UA, B1, "0")
    tap.ok(a == b and (b["signal"] or {}).get("type") == "RESET_REQUIRED",
           "C1 a stale schema_version: RESET_REQUIRED on the standby as on the primary", (a, b))
    psql(DB, "SELECT kizunasync.sync_table('items', bucket_column => 'owner', wakeup => false,"
             " min_schema_version => 1) IS NOT NULL")
    wait_replayed(DB)


def c2_long_poll(tap):
    c = rw(UA, B1, "0")["cursor"]
    h = Session(DB)
    try:
        h.query("BEGIN; UPDATE items SET v = 7 WHERE id = 4;")
        psql(DB, "UPDATE items SET v = 8 WHERE id = 6")
        wait_replayed(DB)
        p = sb(UA, B1, c)
        tap.ok(entries(p) == ["6"] and "~" in p["cursor"], "C2 a hole under a held writer: cursor %s" % p["cursor"], p)
        c = p["cursor"]
        configure_wait(1500)
        t0 = time.monotonic()
        q = sb(UA, B1, c)
        took = time.monotonic() - t0
        tap.ok(q["cursor"] == c and not entries(q) and took >= 1.4,
               "C2 no progress possible: the standby pull waited %.2f s (pull_wait_ms 1500)" % took, q)
        got = {}

        def background():
            t1 = time.monotonic()
            got["page"] = sb(UA, B1, c)
            got["took"] = time.monotonic() - t1

        t = threading.Thread(target=background)
        t.start()
        time.sleep(0.4)
        h.query("COMMIT;")
        t.join()
        q = got["page"]
        tap.ok(entries(q) == ["4"] and got["took"] < 1.4,
               "C2 the holder commits on the primary during the wait: the standby pull returns its row "
               "after %.2f s" % got["took"], q)
    finally:
        h.close()
        configure_wait(0)


def sequence_log_room(n):
    """Make the next n draws write no sequence WAL record (the standby's copy
    of the sequence then runs ahead of what it has replayed)."""
    for _ in range(40):
        if int(one(DB, "SELECT log_cnt FROM kizunasync.change_seq")) > n:
            return
        psql(DB, "UPDATE items SET v = v + 1 WHERE id = 20")
    raise Failed("the sequence never logged ahead")


def c3_behind(tap):
    c = rw(UA, B1, "0")["cursor"]
    configure_wait(400)
    replay_pause(True)
    try:
        psql(DB, "UPDATE items SET v = v + 1 WHERE owner = 1")
        psql(DB, "UPDATE items SET v = v + 1 WHERE owner = 1")
        psql(DB, "UPDATE items SET v = v + 1 WHERE owner = 1")
        psql(DB, "UPDATE items SET v = v + 1 WHERE owner = 1")          # 40 draws: past what is logged
        p = rw(UA, B1, c)
        c2 = p["cursor"]
        t0 = time.monotonic()
        err = error_of(lambda: sb(UA, B1, c2))
        took = time.monotonic() - t0
        tap.ok(err is not None and err[0] == "KZL03" and "not replayed" in err[1] and took >= 0.35,
               "C3 a cursor the paused standby has not replayed: KZL03 after waiting %.2f s" % took, err)
    finally:
        replay_pause(False)
    wait_replayed(DB)
    q = sb(UA, B1, c2)
    tap.ok(q["cursor"] == c2 and not entries(q), "C3 after replay the standby answers that cursor", q)
    configure_wait(0)


def c4_unreplayed_hole(tap):
    c = rw(UA, B1, "0")["cursor"]
    sequence_log_room(4)
    wait_replayed(DB)
    replay_pause(True)
    h = Session(DB)
    try:
        h.query("BEGIN; UPDATE items SET v = 100 WHERE id = 8;")
        psql(DB, "UPDATE items SET v = 101 WHERE id = 10")
        p = ro(UA, B1, c)
        cur = p["cursor"]
        tap.ok("~" in cur, "C4 on the primary: a hole under the held writer (%s)" % cur, p)
        try:
            q = sb(UA, B1, cur)
            kept = q["cursor"] == cur
            how = "the standby answers the cursor unchanged, hole kept" if kept else "cursor %s" % q["cursor"]
        except SqlError as e:
            kept = e.sqlstate == "KZL03"
            how = "the standby answers KZL03 (%s)" % e.message
        tap.ok(kept, "C4 a hole the standby has not replayed is never dropped: " + how)
    finally:
        replay_pause(False)
        h.query("COMMIT;")
        h.close()
    wait_replayed(DB)
    q = sb(UA, B1, cur)
    tap.ok("8" in entries(q), "C4 once replayed, the hole's row arrives", q)


def c5_unreplayed_grant(tap):
    # user b pulls bucket 2 for the first time on the primary, in a
    # transaction that commits (with the grant) only after a row of bucket 2
    # was deleted above the page's cursor
    first = Session(DB)
    try:
        first.query("SET ROLE authenticated;")
        out = first.query("BEGIN; SELECT set_config('request.jwt.claims', '{\"sub\": \"%s\", \"role\": \"authenticated\"}', true) IS NULL;"
                          " SELECT 'P|' || kizunasync.pull('%s', '0', 1)::text;"
                          % (UB, __import__("json").dumps(B2)))
        import json
        page = json.loads([ln for ln in out if ln.startswith("P|")][0][2:])
        c = page["cursor"]
        psql(DB, "DELETE FROM items WHERE id = 5")
        wait_replayed(DB)
        replay_pause(True)
        first.query("COMMIT;")
    finally:
        first.close()
    try:
        grants = one(DB, "SELECT count(*) FROM kizunasync.bucket_grants WHERE user_id = '%s'" % UB)
        err = error_of(lambda: sb(UB, B2, c))
        tap.ok(grants == "1" and err is not None and err[0] == "KZL03",
               "C5 a grant the standby has not replayed and a tombstone in range: KZL03", err)
    finally:
        replay_pause(False)
    p = rw(UB, B2, c)
    tap.same(entries(p), ["-5"], "C5 the retry on the primary delivers the tombstone")


def c7_unreplayed_grant_hidden(tap):
    # user c pulls bucket 1 of vis for the first time on the primary, in a
    # transaction that commits (with the grant) only after row 3 of it was
    # hidden from every caller (RLS) by a write above the page's cursor
    import json
    first = Session(DB)
    try:
        first.query("SET ROLE authenticated;")
        out = first.query("BEGIN; SELECT set_config('request.jwt.claims', '{\"sub\": \"%s\", \"role\": \"authenticated\"}', true) IS NULL;"
                          " SELECT 'P|' || kizunasync.pull('%s', '0', 1)::text;" % (UC, json.dumps(V1)))
        page = json.loads([ln for ln in out if ln.startswith("P|")][0][2:])
        c = page["cursor"]
        psql(DB, "UPDATE vis SET hidden = true WHERE id = 3")
        wait_replayed(DB)
        replay_pause(True)
        first.query("COMMIT;")
    finally:
        first.close()
    try:
        grants = one(DB, "SELECT count(*) FROM kizunasync.bucket_grants WHERE user_id = '%s'" % UC)
        err = error_of(lambda: sb(UC, V1, c))
        tap.ok(grants == "1" and err is not None and err[0] == "KZL03",
               "C7 a grant the standby has not replayed and a change the caller may not see in range: KZL03", err)
    finally:
        replay_pause(False)
    p = rw(UC, V1, c)
    tap.same(entries(p), ["-3"], "C7 the retry on the primary delivers the change as a tombstone")
    wait_replayed(DB)
    q = sb(UC, V1, c)
    tap.same(entries(q), ["-3"], "C7 once the grant is replayed, the standby answers the same page")


def c6_registry(tap):
    first = rw(UA, NOTES, "0", client_id=CLIENT)
    wait_replayed(DB)
    before = psql(DB, "SELECT cursor, last_seen FROM kizunasync.clients WHERE client_id = '%s'" % CLIENT)
    again = sb(UA, NOTES, "0", client_id=CLIENT)
    tap.same(again, first, "C6 a registered client's bootstrap runs on the standby (the same page)")
    psql(DB, "INSERT INTO notes VALUES (2, 'two')")
    wait_replayed(DB)
    d = sb(UA, NOTES, first["cursor"], client_id=CLIENT)
    tap.same(entries(d), ["2"], "C6 and its delta pulls")
    after = psql(DB, "SELECT cursor, last_seen FROM kizunasync.clients WHERE client_id = '%s'" % CLIENT)
    tap.same(after, before, "C6 the registry is left as the primary wrote it")


def main():
    tap = Tap("replica checks")
    try:
        fresh_db(DB, SETUP)
        for check in (c1_signals, c2_long_poll, c3_behind, c4_unreplayed_hole, c5_unreplayed_grant,
                      c6_registry, c7_unreplayed_grant_hidden):
            try:
                check(tap)
            except (Failed, SqlError) as e:
                tap.ok(False, "%s ran to its end" % check.__name__, e)
                if one("postgres", "SELECT pg_get_wal_replay_pause_state()", standby=True) != "not paused":
                    replay_pause(False)
    except (Failed, SqlError) as e:
        tap.ok(False, "set-up", e)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
