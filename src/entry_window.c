/*-------------------------------------------------------------------------
 *
 * entry_window.c
 *	  A pull's reads of the entries (entry_window.h).
 *
 *	  A pull names up to max_pull_buckets buckets (decisions/0022), and
 *	  its page merges their windows by seq (pull_stream.c), asking each for
 *	  a few entries at a time.  Each read is a rescan of one index scan kept
 *	  open for the whole page: one descent of the pair index and the
 *	  entries returned, with no statement to plan or executor to start
 *	  (decisions/0025).  The conditions are those the pull's statement had
 *	  (pair, table, kind, the tombstone's bucket snapshot), evaluated here
 *	  with built-in jsonb functions only: nothing a user defines runs, so
 *	  no privileged section is needed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "bookkeeping.h"
#include "entry_key.h"
#include "entry_window.h"

/* entry.c names the same relations */
#define ENTRIES				"entries"
#define ENTRIES_SEQ_IDX		"entries_pkey"
#define ENTRIES_PAIR_IDX	"entries_pair_idx"

static AttrNumber
window_att(Relation heap, const char *name)
{
	AttrNumber	a = attnameAttNum(heap, name, false);

	if (a <= 0)
		elog(ERROR, "kizunasync.entries lacks its column \"%s\"", name);
	return a;
}

void
kz_entry_window_begin(KzEntryWindow *w, Snapshot snap)
{
	memset(w, 0, sizeof(*w));
	w->snap = snap;
	w->heap = table_open(kz_bk_relid(ENTRIES), AccessShareLock);
	w->pair_index = index_open(kz_bk_relid(ENTRIES_PAIR_IDX), AccessShareLock);
	w->slot = table_slot_create(w->heap, NULL);
	w->pair_scan = index_beginscan(w->heap, w->pair_index, snap, 3, 0);
	w->a_seq = window_att(w->heap, "seq");
	w->a_bucket = window_att(w->heap, "bucket");
	w->a_tid = window_att(w->heap, "tid");
	w->a_key = window_att(w->heap, "key");
	w->a_kind = window_att(w->heap, "kind");
	w->a_deleted_at = window_att(w->heap, "deleted_at");
	w->a_snapshot = window_att(w->heap, "snapshot");
}

/* The seq index, opened at its first use. */
static void
window_open_seq_index(KzEntryWindow *w)
{
	if (w->seq_index == NULL)
		w->seq_index = index_open(kz_bk_relid(ENTRIES_SEQ_IDX), AccessShareLock);
}

void
kz_entry_window_end(KzEntryWindow *w)
{
	if (w->seq_scan != NULL)
		index_endscan(w->seq_scan);
	if (w->range_scan != NULL)
		index_endscan(w->range_scan);
	if (w->seq_index != NULL)
		index_close(w->seq_index, NoLock);
	index_endscan(w->pair_scan);
	ExecDropSingleTupleTableSlot(w->slot);
	index_close(w->pair_index, NoLock);
	table_close(w->heap, NoLock);
}

/*
 * Does the tombstone's bucket snapshot hold the requested value?  As the
 * statement "(snapshot -> col) = val" did: NULL (no match) when the
 * snapshot is NULL, not an object or lacks the key; else jsonb equality.
 */
static bool
window_snapshot_matches(KzEntryWindow *w, const KzEntryQuery *q)
{
	bool		isnull;
	Datum		d = slot_getattr(w->slot, w->a_snapshot, &isnull);
	Jsonb	   *snap;
	JsonbValue	vbuf;
	JsonbValue *v;
	bool		match;

	if (isnull)
		return false;
	snap = DatumGetJsonbP(d);
	if (!JB_ROOT_IS_OBJECT(snap))
		return false;
	v = getKeyJsonValueFromContainer(&snap->root, q->snap_col, strlen(q->snap_col), &vbuf);
	if (v == NULL)
		return false;
	match = compareJsonbContainers(&JsonbValueToJsonb(v)->root, &q->snap_val->root) == 0;
	if ((Pointer) snap != DatumGetPointer(d))
		pfree(snap);
	return match;
}

/* Is the entry in the slot one q asks for?  Then *out. */
static bool
window_match(KzEntryWindow *w, const KzEntryQuery *q, KzEntryRow *out)
{
	bool		isnull;
	bool		tomb;
	Datum		d;
	HeapTuple	tup;
	bool		should_free;

	if (DatumGetInt32(slot_getattr(w->slot, w->a_tid, &isnull)) != q->conf->id)
		return false;			/* another table's entry under the same number */
	tomb = DatumGetChar(slot_getattr(w->slot, w->a_kind, &isnull)) == 'd';
	if (tomb ? !q->tombs : q->tombs_only)
		return false;
	if (tomb && q->snap_col != NULL && !window_snapshot_matches(w, q))
		return false;
	out->seq = DatumGetInt64(slot_getattr(w->slot, w->a_seq, &isnull));
	out->pk = kz_entry_key_text(DatumGetByteaPP(slot_getattr(w->slot, w->a_key, &isnull)));
	out->tomb = tomb;
	d = slot_getattr(w->slot, w->a_deleted_at, &isnull);
	out->deleted_at = isnull ? 0 : DatumGetTimestampTz(d);
	tup = ExecFetchSlotHeapTuple(w->slot, false, &should_free);
	Assert(!should_free);
	out->xmin = HeapTupleHeaderGetXmin(tup->t_data);
	return true;
}

int
kz_entry_window_read(KzEntryWindow *w, const KzEntryQuery *q, int64 after, int64 hi, int max,
					 KzEntryRow *out)
{
	ScanKeyData key[3];
	int			n = 0;

	w->have = false;
	if (max <= 0 || after >= hi)
		return 0;
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(q->bucket));
	ScanKeyInit(&key[1], 2, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(after));
	ScanKeyInit(&key[2], 2, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(hi));
	index_rescan(w->pair_scan, key, 3, NULL, 0);
	while (n < max && index_getnext_slot(w->pair_scan, ForwardScanDirection, w->slot))
	{
		if (window_match(w, q, &out[n]))
			n++;
		CHECK_FOR_INTERRUPTS();
	}
	return n;
}

bool
kz_entry_window_seq(KzEntryWindow *w, int64 seq, int64 *bucket)
{
	ScanKeyData key[1];
	bool		isnull;

	if (w->seq_scan == NULL)
	{
		window_open_seq_index(w);
		w->seq_scan = index_beginscan(w->heap, w->seq_index, w->snap, 1, 0);
	}
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(seq));
	index_rescan(w->seq_scan, key, 1, NULL, 0);
	w->have = index_getnext_slot(w->seq_scan, ForwardScanDirection, w->slot);
	if (w->have)
		*bucket = DatumGetInt64(slot_getattr(w->slot, w->a_bucket, &isnull));
	return w->have;
}

void
kz_entry_window_range(KzEntryWindow *w, int64 after, int64 hi)
{
	ScanKeyData key[2];

	w->have = false;
	if (w->range_scan == NULL)
	{
		window_open_seq_index(w);
		w->range_scan = index_beginscan(w->heap, w->seq_index, w->snap, 2, 0);
	}
	ScanKeyInit(&key[0], 1, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(after));
	ScanKeyInit(&key[1], 1, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(hi));
	index_rescan(w->range_scan, key, 2, NULL, 0);
}

bool
kz_entry_window_range_next(KzEntryWindow *w, int64 *seq, int64 *bucket)
{
	bool		isnull;

	Assert(w->range_scan != NULL);
	w->have = index_getnext_slot(w->range_scan, ForwardScanDirection, w->slot);
	if (w->have)
	{
		*seq = DatumGetInt64(slot_getattr(w->slot, w->a_seq, &isnull));
		*bucket = DatumGetInt64(slot_getattr(w->slot, w->a_bucket, &isnull));
	}
	CHECK_FOR_INTERRUPTS();
	return w->have;
}

bool
kz_entry_window_match(KzEntryWindow *w, const KzEntryQuery *q, KzEntryRow *out)
{
	return w->have && window_match(w, q, out);
}
