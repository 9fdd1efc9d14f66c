"""Instructions per commit, synced vs the unsynced twin, from four callgrind
profiles of single-user backends (each table at two commit counts: the
difference of the two runs divided by the difference of the counts is the
cost of one commit, without the backend's start and warm-up), itemized so
that the parts add up to the whole difference (bench/write_profile).

    insns_attr.py DIR N1 N2      (DIR/cg.{synced_t,plain_t}.{N1,N2})
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import callgrind  # noqa: E402

OURS = "kizunasync.so"
PASS_THROUGH = {"standard_ExecutorStart", "standard_ExecutorRun", "standard_ExecutorFinish",
                "standard_ExecutorEnd", "standard_ProcessUtility"}
# Children of kz_stamp_record, in the order the write path calls them.
STAMP_PARTS = [
    ("key, bucket number, superseded entries: lookup and delete", ["kz_entry_prepare"]),
    ("entry heap tuple + the section's index entries", ["kz_entry_insert_first"]),
    ("entry's other index entries (after the section)", ["kz_entry_insert_rest"]),
    ("nextval", ["nextval_internal"]),
    ("opening and closing the bookkeeping relations",
     ["kz_entry_writer_open", "kz_entry_writer_close", "kz_bk_open", "kz_bk_relid", "kz_bk_index",
      "kz_bk_close", "table_open", "relation_open", "table_close", "relation_close", "kz_bk_column"]),
]


def main():
    d, n1, n2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    prof = {(t, n): callgrind.Profile(f"{d}/cg.{t}.{n}") for t in ("synced_t", "plain_t") for n in (n1, n2)}
    k = float(n2 - n1)

    def per(t, fn):
        return (fn(prof[(t, n2)]) - fn(prof[(t, n1)])) / k

    def ours_total(p):
        ours = p.in_object(OURS)
        into = sum(c for (a, b), c in p.edges.items() if b in ours and a not in ours)
        back = sum(c for (a, b), c in p.edges.items() if a in ours and b in PASS_THROUGH)
        return into - back

    def incl(name):
        return lambda p: p.inclusive(name)

    def calls_into(name):
        return lambda p: p.calls_into(name)

    def edge_from(caller, names):
        return lambda p: sum(p.edge(caller, n) for n in names)

    tot_s, tot_t = per("synced_t", lambda p: p.total), per("plain_t", lambda p: p.total)
    diff = tot_s - tot_t
    rows = []

    def row(label, s, t=0.0, depth=1, part=True):
        rows.append((label, s, t, depth, part))

    ours = per("synced_t", ours_total)
    cap = per("synced_t", calls_into("kz_capture"))
    stamp = per("synced_t", calls_into("kz_stamp_record"))
    row("kizunasync code, under its entry points", ours, 0.0, 1, False)
    row("row trigger kz_capture (key, bucket, image)", cap, 0.0, 2)
    row("recording: kz_stamp_record", stamp, 0.0, 2, False)
    parts = 0.0
    for label, names in STAMP_PARTS:
        v = per("synced_t", edge_from("kz_stamp_record", names))
        parts += v
        row(label, v, 0.0, 3)
    row("the rest of kz_stamp_record (its own code, CommandCounterIncrement, buffers)",
        stamp - parts, 0.0, 3)
    row("statement batching, hooks and callbacks (capture_batch.c and others)", ours - cap - stamp, 0.0, 2)

    # core work that differs because the table is synced
    fin_s = per("synced_t", incl("standard_ExecutorFinish")) - cap
    fin_t = per("plain_t", incl("standard_ExecutorFinish"))
    row("core: AFTER trigger queue firing (ExecutorFinish without kz_capture)", fin_s, fin_t)
    for label, fn in (("core: executor run (incl. queueing the trigger event)", "standard_ExecutorRun"),
                      ("core: executor start and end", None),
                      ("core: parse, analyze, plan", None)):
        if fn:
            row(label, per("synced_t", incl(fn)), per("plain_t", incl(fn)))
        elif "start" in label:
            f = ("standard_ExecutorStart", "standard_ExecutorEnd")
            row(label, sum(per("synced_t", incl(x)) for x in f), sum(per("plain_t", incl(x)) for x in f))
        else:
            f = ("pg_parse_query", "pg_analyze_and_rewrite_fixedparams", "pg_plan_queries")
            row(label, sum(per("synced_t", incl(x)) for x in f), sum(per("plain_t", incl(x)) for x in f))
    cb = ("batch_xact_callback", "queue_xact_callback", "wakeup_xact_callback")
    com_s = per("synced_t", incl("CommitTransactionCommand")) - sum(per("synced_t", calls_into(x)) for x in cb)
    row("core: commit (without kizunasync's callbacks; WAL flush of more bytes)", com_s,
        per("plain_t", incl("CommitTransactionCommand")))

    print(f"{'':64} {'synced':>9} {'twin':>9} {'diff':>9}")
    print(f"{'instructions per commit':64} {tot_s:9.0f} {tot_t:9.0f} {diff:+9.0f}   "
          f"ratio {tot_s / tot_t:.2f} (target <= 1.3)")
    itemized = 0.0
    for label, s, t, depth, part in rows:
        d_ = s - t
        if part:
            itemized += d_
        pad = "  " * depth
        print(f"{pad + label:64} {s:9.0f} {t:9.0f} {d_:+9.0f}")
    rest = diff - itemized
    print(f"{'  not itemized (the difference minus the parts above)':64} {'':9} {'':9} {rest:+9.0f}")
    share = itemized / diff * 100 if diff else 100.0
    print(f"itemized: {itemized:+.0f} of {diff:+.0f} ({share:.1f}%; the parts must be within 10% of the whole)")
    return 0 if abs(rest) <= 0.1 * abs(diff) else 1


if __name__ == "__main__":
    sys.exit(main())
