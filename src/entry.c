/*-------------------------------------------------------------------------
 *
 * entry.c
 *	  The entries of the bookkeeping (entry.h; decisions/0092).
 *
 * kizunasync.entries holds, per (synced table, row key, bucket), at most
 * one entry: the row's latest change ('r') or a tombstone ('d').  Its
 * columns, narrow on purpose:
 *	 seq		the change's number (primary key: the seq index)
 *	 bucket		the bucket value's number: a keyed 64-bit hash of the
 *				value's label (entry_bucket.c; 0: a NULL value, which no
 *				pull reads); (bucket, seq) is the pair index a pull's
 *				window and hole classification read
 *	 tid		synced_tables.id
 *	 key		the row key in binary (below)
 *	 kind, row_xmin, deleted_at, snapshot
 *	 (tid, key, bucket) is unique: the key index the write path finds the
 *	 entries a change supersedes through.
 *
 * Bucket numbers and their labels: entry_bucket.c.
 *
 * Keys: one format byte, then 'i' a canonical int64 key text as 8 bytes
 * (big-endian), 'u' a lowercase uuid key text as its 16 bytes, 't' any
 * other key text's bytes (entry_key.c): a function of the key text alone,
 * so a key column's type change leaves every key's bytes as they were.
 * The key text comes back from the bytes alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "entry.h"
#include "entry_key.h"

#define ENTRIES				"entries"
#define ENTRIES_SEQ_IDX		"entries_pkey"
#define ENTRIES_PAIR_IDX	"entries_pair_idx"
#define ENTRIES_KEY_IDX		"entries_key_idx"
#define ENTRIES_TOMB_IDX	"entries_tomb_idx"


/* ------------------------------------------------------------ layout */

void
kz_entry_check_layout(void)
{
	Oid			nsp = get_namespace_oid(KZ_SCHEMA, true);

	if (OidIsValid(nsp) && !OidIsValid(get_relname_relid(ENTRIES, nsp)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the SQL objects of extension \"kizunasync\" are older than its library"),
				 errdetail("The bookkeeping has no table %s.%s: it is in the layout of release 0.2.0 or older.",
						   KZ_SCHEMA, ENTRIES),
				 errhint("Run ALTER EXTENSION kizunasync UPDATE.")));
}

/* ----------------------------------------------------------- the write */

void
kz_entry_writer_open(KzEntryWriter *w)
{
	int			i;

	kz_entry_check_layout();
	kz_bk_open(&w->t, ENTRIES);
	w->key_index = kz_bk_index(&w->t, ENTRIES_KEY_IDX);
	w->first = palloc0(sizeof(bool) * Max(w->t.nindexes, 1));
	w->skip_row = palloc0(sizeof(bool) * Max(w->t.nindexes, 1));
	w->skip_tomb = palloc0(sizeof(bool) * Max(w->t.nindexes, 1));
	for (i = 0; i < w->t.nindexes; i++)
	{
		const char *name = RelationGetRelationName(w->t.indexes[i]);

		w->first[i] = strcmp(name, ENTRIES_SEQ_IDX) == 0 || strcmp(name, ENTRIES_PAIR_IDX) == 0;
		/* the tombstones' index: WHERE kind = 'd' */
		w->skip_row[i] = strcmp(name, ENTRIES_TOMB_IDX) == 0;
		if (w->t.partial[i] && !w->skip_row[i])
			elog(ERROR, "unexpected partial index \"%s\" on kizunasync.entries", name);
	}
	w->c_seq = kz_bk_column(&w->t, "seq");
	w->c_bucket = kz_bk_column(&w->t, "bucket");
	w->c_tid = kz_bk_column(&w->t, "tid");
	w->c_row_xmin = kz_bk_column(&w->t, "row_xmin");
	w->c_kind = kz_bk_column(&w->t, "kind");
	w->c_key = kz_bk_column(&w->t, "key");
	w->c_deleted_at = kz_bk_column(&w->t, "deleted_at");
	w->c_snapshot = kz_bk_column(&w->t, "snapshot");
}

void
kz_entry_writer_close(KzEntryWriter *w)
{
	pfree(w->first);
	pfree(w->skip_row);
	pfree(w->skip_tomb);
	kz_bk_close(&w->t);
}

/* At most this many entries of one (key, bucket) are looked at by a change. */
#define KZ_ENTRY_MAX_MATCHES	8

/* A key with more entries than this is probed bucket by bucket. */
#define KZ_ENTRY_FEW			4

/* How the key's entries are looked for (entry_victims). */
typedef enum EntryFind
{
	ENTRY_FIND_KEY,				/* all of the key's, as long as it has few */
	ENTRY_FIND_BUCKET,			/* those of (tid, key, bucket) */
	ENTRY_FIND_ROW_ELSEWHERE	/* its row entry in another bucket */
} EntryFind;

/*
 * Collect, after victims[0 .. nvictims - 1], the key's entries that a
 * change in bucket supersedes, as find says: ENTRY_FIND_KEY reads the
 * key's entries through (tid, key) and keeps its row entry in any bucket
 * and whatever it has in bucket, but gives up (*more) when it has more
 * than KZ_ENTRY_FEW; ENTRY_FIND_BUCKET reads (tid, key, bucket)
 * (one entry, or a row entry and a tombstone carried over from 0.2.0 or a
 * restored dump); ENTRY_FIND_ROW_ELSEWHERE reads through (tid, key) for a
 * row entry of another bucket, stepping over the key's tombstones of other
 * buckets however many.  *row_found says whether a row entry was kept.
 */
static int
entry_victims(KzEntryWriter *w, int32 tid, bytea *key, int64 bucket, EntryFind find,
			  ItemPointerData *victims, bool *rows, int nvictims, bool *row_found,
			  bool *more)
{
	ScanKeyData skey[3];
	IndexScanDesc scan;
	TupleTableSlot *slot = table_slot_create(w->t.heap, NULL);
	int			nkeys = find == ENTRY_FIND_BUCKET ? 3 : 2;
	int			limit = nvictims + KZ_ENTRY_MAX_MATCHES;
	int			nread = 0;

	ScanKeyInit(&skey[0], 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(tid));
	ScanKeyInit(&skey[1], 2, BTEqualStrategyNumber, F_BYTEAEQ, PointerGetDatum(key));
	ScanKeyInit(&skey[2], 3, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(bucket));
	scan = index_beginscan(w->t.heap, w->key_index, SnapshotSelf, nkeys, 0);
	index_rescan(scan, skey, nkeys, NULL, 0);
	*more = false;
	while (nvictims < limit && index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		char		kind = DatumGetChar(slot_getattr(slot, w->c_kind + 1, &isnull));

		if (find == ENTRY_FIND_KEY && ++nread > KZ_ENTRY_FEW)
		{
			*more = true;		/* the key has many entries: ask by bucket */
			break;
		}
		if (find != ENTRY_FIND_BUCKET)
		{
			bool		here = DatumGetInt64(slot_getattr(slot, w->c_bucket + 1, &isnull)) == bucket;

			/* a tombstone of another bucket stays */
			if (here ? find == ENTRY_FIND_ROW_ELSEWHERE : kind != 'r')
				continue;
		}
		rows[nvictims] = (kind == 'r');
		*row_found |= rows[nvictims];
		victims[nvictims++] = slot->tts_tid;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return nvictims;
}

/*
 * Delete the key's entries that ch supersedes, found through the key index
 * with SnapshotSelf, as bookkeeping.c reads: whatever it has in ch's
 * bucket, and its row entry in another bucket.
 *
 * A key that moved through many buckets keeps a tombstone in each until
 * the reap, so what a change reads must not depend on how many there are
 * (decisions/0092, "As built"): a key with few entries (nearly all) is read
 * whole through (tid, key), one descent; one with more is probed by (tid,
 * key, bucket), and its row entry is looked for in other buckets only when
 * it is not in ch's bucket and may be elsewhere.  The capture knows: a
 * row's entry is in the bucket of its last recorded version, so a DELETE,
 * an UPDATE in place and the tombstone of a move find it in their own
 * bucket, and an INSERT and the row entry of a move (after that tombstone)
 * have none elsewhere (no_row_elsewhere).  Only a row the bookkeeping did
 * not see move (a disabled trigger) makes a change read all of its key's
 * entries, once.
 *
 * A row entry is waited for when another transaction deletes it (only a
 * writer of the key or repair does, and they hold or wait for the row's
 * lock anyway), then looked for again.  A tombstone is not: only a reap
 * deletes one without the row's lock, and one it holds is left to it
 * (decisions/0003, "No writer waits for retention"; the key index is not
 * unique, so the new entry never waits for it either).
 */
static void
entry_supersede(KzEntryWriter *w, const KzChange *ch, bytea *key, int64 bucket)
{
	for (;;)
	{
		ItemPointerData victims[2 * KZ_ENTRY_MAX_MATCHES];
		bool		rows[2 * KZ_ENTRY_MAX_MATCHES];
		int			nvictims;
		bool		row_found = false;
		bool		more;
		bool		again = false;
		int			i;

		nvictims = entry_victims(w, ch->tid, key, bucket, ENTRY_FIND_KEY, victims, rows, 0,
								 &row_found, &more);
		if (more)
		{
			row_found = false;
			nvictims = entry_victims(w, ch->tid, key, bucket, ENTRY_FIND_BUCKET, victims, rows,
									 0, &row_found, &more);
			if (!row_found && !(ch->op != 'd' && ch->no_row_elsewhere))
				nvictims = entry_victims(w, ch->tid, key, bucket, ENTRY_FIND_ROW_ELSEWHERE,
										 victims, rows, nvictims, &row_found, &more);
		}

		for (i = 0; i < nvictims && !again; i++)
		{
			TM_FailureData tmfd;
			TM_Result	result;

			result = heap_delete(w->t.heap, &victims[i], GetCurrentCommandId(true),
								 InvalidSnapshot, rows[i], &tmfd, false);
			switch (result)
			{
				case TM_Ok:
				case TM_SelfModified:	/* deleted by this command already */
				case TM_BeingModified:	/* a tombstone a reap holds: left to it */
					break;
				case TM_Updated:
				case TM_Deleted:
					/* a concurrent transaction removed it and committed */
					if (rows[i])
					{
						CHECK_FOR_INTERRUPTS();
						again = true;	/* look again */
					}
					break;
				default:
					elog(ERROR, "unexpected heap_delete status %u on \"%s\"",
						 result, RelationGetRelationName(w->t.heap));
			}
		}
		if (!again)
			return;
		CommandCounterIncrement();
	}
}

void
kz_entry_prepare(KzEntryWriter *w, const KzChange *ch, KzEntryNew *e)
{
	int			natts = RelationGetDescr(w->t.heap)->natts;
	bytea	   *key = kz_entry_key(ch->pk);
	int64		bucket = kz_entry_bucket(ch->tid, ch->bucket_value, true);

	/* earlier changes of this batch must be visible to the lookup */
	CommandCounterIncrement();
	entry_supersede(w, ch, key, bucket);

	e->tup = NULL;
	e->tomb = (ch->op == 'd');
	e->deferred = false;
	e->values = palloc0(sizeof(Datum) * natts);
	e->nulls = palloc(sizeof(bool) * natts);
	memset(e->nulls, true, sizeof(bool) * natts);
	e->values[w->c_bucket] = Int64GetDatum(bucket);
	e->nulls[w->c_bucket] = false;
	e->values[w->c_tid] = Int32GetDatum(ch->tid);
	e->nulls[w->c_tid] = false;
	e->values[w->c_key] = PointerGetDatum(key);
	e->nulls[w->c_key] = false;
	e->values[w->c_kind] = CharGetDatum(ch->op == 'd' ? 'd' : 'r');
	e->nulls[w->c_kind] = false;
	if (ch->op == 'd')
	{
		e->values[w->c_snapshot] = DirectFunctionCall1(jsonb_in, CStringGetDatum(ch->snapshot));
		e->nulls[w->c_snapshot] = false;
		e->values[w->c_deleted_at] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
		e->nulls[w->c_deleted_at] = false;
	}
	else if (TransactionIdIsValid(ch->row_xmin))
	{
		e->values[w->c_row_xmin] = TransactionIdGetDatum(ch->row_xmin);
		e->nulls[w->c_row_xmin] = false;
	}
}

void
kz_entry_insert_first(KzEntryWriter *w, KzEntryNew *e, int64 seq)
{
	e->values[w->c_seq] = Int64GetDatum(seq);
	e->nulls[w->c_seq] = false;
	e->tup = kz_bk_insert_first(&w->t, e->values, e->nulls, w->first, &e->deferred);
}

void
kz_entry_insert_rest(KzEntryWriter *w, KzEntryNew *e)
{
	kz_bk_insert_rest(&w->t, e->tup, w->first, e->tomb ? w->skip_tomb : w->skip_row,
					  e->deferred);
	pfree(e->values);
	pfree(e->nulls);
}

/* ------------------------------------------------------ key lookups */

bool
kz_entry_key_tombstone(int32 tid, const bytea *key, Snapshot snap, int64 *bucket,
					   TransactionId *xmin)
{
	Relation	heap = table_open(kz_bk_relid(ENTRIES), AccessShareLock);
	Relation	index = index_open(kz_bk_relid(ENTRIES_KEY_IDX), AccessShareLock);
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	ScanKeyData skey[2];
	IndexScanDesc scan;
	AttrNumber	a_seq = attnameAttNum(heap, "seq", false);
	AttrNumber	a_kind = attnameAttNum(heap, "kind", false);
	AttrNumber	a_bucket = attnameAttNum(heap, "bucket", false);
	int64		tomb_seq = -1;
	int64		row_seq = -1;

	ScanKeyInit(&skey[0], 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(tid));
	ScanKeyInit(&skey[1], 2, BTEqualStrategyNumber, F_BYTEAEQ, PointerGetDatum(key));
	scan = index_beginscan(heap, index, SnapshotAny, 2, 0);
	index_rescan(scan, skey, 2, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) slot;
		bool		visible;
		bool		isnull;
		int64		seq;

		LockBuffer(bslot->buffer, BUFFER_LOCK_SHARE);
		visible = HeapTupleSatisfiesVisibility(bslot->base.tuple, snap, bslot->buffer);
		LockBuffer(bslot->buffer, BUFFER_LOCK_UNLOCK);
		if (!visible)
			continue;
		seq = DatumGetInt64(slot_getattr(slot, a_seq, &isnull));
		if (DatumGetChar(slot_getattr(slot, a_kind, &isnull)) == 'r')
			row_seq = Max(row_seq, seq);
		else if (seq > tomb_seq)
		{
			tomb_seq = seq;
			*bucket = DatumGetInt64(slot_getattr(slot, a_bucket, &isnull));
			*xmin = HeapTupleHeaderGetXmin(bslot->base.tuple->t_data);
		}
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	return tomb_seq >= 0 && row_seq < tomb_seq;
}

/* ------------------------------------------------ scans for the horizon */

static void
entry_scan_begin(KzEntryScan *s, const char *index, int nkeys, ScanKey keys, ScanDirection dir)
{
	s->heap = table_open(kz_bk_relid(ENTRIES), AccessShareLock);
	s->index = index_open(kz_bk_relid(index), AccessShareLock);
	s->slot = table_slot_create(s->heap, NULL);
	s->dir = dir;
	s->seen = 0;
	s->a_bucket = attnameAttNum(s->heap, "bucket", false);
	s->scan = index_beginscan(s->heap, s->index, SnapshotAny, nkeys, 0);
	index_rescan(s->scan, keys, nkeys, NULL, 0);
}

void
kz_entry_scan_seqs(KzEntryScan *s, int64 lo, int64 hi, ScanDirection dir)
{
	ScanKeyData key[2];

	ScanKeyInit(&key[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(lo));
	ScanKeyInit(&key[1], 1, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(hi));
	entry_scan_begin(s, ENTRIES_SEQ_IDX, 2, key, dir);
}

/* The pair index's keys of bucket's entries with seqs in [lo, hi]. */
static void
entry_bucket_keys(ScanKeyData *key, int64 bucket, int64 lo, int64 hi)
{
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(bucket));
	ScanKeyInit(&key[1], 2, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(lo));
	ScanKeyInit(&key[2], 2, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(hi));
}

void
kz_entry_scan_bucket(KzEntryScan *s, int64 bucket, int64 lo, int64 hi)
{
	ScanKeyData key[3];

	entry_bucket_keys(key, bucket, lo, hi);
	entry_scan_begin(s, ENTRIES_PAIR_IDX, 3, key, ForwardScanDirection);
}

void
kz_entry_scan_bucket_again(KzEntryScan *s, int64 bucket, int64 lo, int64 hi)
{
	ScanKeyData key[3];

	entry_bucket_keys(key, bucket, lo, hi);
	index_rescan(s->scan, key, 3, NULL, 0);
}

bool
kz_entry_scan_next(KzEntryScan *s, int64 *seq, HeapTupleHeader *htup)
{
	bool		isnull;
	bool		should_free;
	HeapTuple	tup;

	if (!index_getnext_slot(s->scan, s->dir, s->slot))
		return false;
	s->seen++;
	*seq = DatumGetInt64(slot_getattr(s->slot, 1, &isnull));
	tup = ExecFetchSlotHeapTuple(s->slot, false, &should_free);
	Assert(!should_free);
	*htup = tup->t_data;
	return true;
}

int64
kz_entry_scan_bucket_of(KzEntryScan *s)
{
	bool		isnull;

	return DatumGetInt64(slot_getattr(s->slot, s->a_bucket, &isnull));
}

void
kz_entry_scan_end(KzEntryScan *s)
{
	index_endscan(s->scan);
	ExecDropSingleTupleTableSlot(s->slot);
	index_close(s->index, NoLock);
	table_close(s->heap, NoLock);
}

Oid
kz_entry_relid(void)
{
	return kz_bk_relid(ENTRIES);
}

int64
kz_entry_max_seq(void)
{
	KzEntryScan s;
	int64		seq = 0;
	HeapTupleHeader h;

	kz_entry_scan_seqs(&s, PG_INT64_MIN, PG_INT64_MAX, BackwardScanDirection);
	if (!kz_entry_scan_next(&s, &seq, &h))
		seq = 0;
	kz_entry_scan_end(&s);
	return seq;
}

void
kz_entry_scan_unsettled(KzEntryNoteFn note, void *arg)
{
	Relation	rel = table_open(kz_bk_relid(ENTRIES), AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber	seq_att = attnameAttNum(rel, "seq", false);
	AttrNumber	tid_att = attnameAttNum(rel, "tid", false);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	Buffer		vmbuffer = InvalidBuffer;
	BlockNumber blk;

	if (seq_att <= 0 || tid_att <= 0)
		elog(ERROR, "kizunasync.entries lacks its seq or tid column");
	for (blk = 0; blk < nblocks; blk++)
	{
		Buffer		buf;
		Page		page;
		OffsetNumber off,
					maxoff;

		CHECK_FOR_INTERRUPTS();
		if (VM_ALL_VISIBLE(rel, blk, &vmbuffer))
			continue;
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		maxoff = PageIsNew(page) ? InvalidOffsetNumber : PageGetMaxOffsetNumber(page);
		for (off = FirstOffsetNumber; off <= maxoff; off = OffsetNumberNext(off))
		{
			ItemId		lp = PageGetItemId(page, off);
			HeapTupleData tup;
			bool		isnull;
			Datum		seq,
						tid;

			if (!ItemIdIsNormal(lp))
				continue;
			tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tup.t_len = ItemIdGetLength(lp);
			tup.t_tableOid = RelationGetRelid(rel);
			ItemPointerSet(&tup.t_self, blk, off);
			if (HeapTupleHeaderXminCommitted(tup.t_data) ||
				HeapTupleHeaderXminInvalid(tup.t_data))
				continue;
			seq = heap_getattr(&tup, seq_att, desc, &isnull);
			if (isnull)
				continue;
			tid = heap_getattr(&tup, tid_att, desc, &isnull);
			if (isnull)
				continue;
			note(arg, HeapTupleHeaderGetRawXmin(tup.t_data), DatumGetInt64(seq),
				 DatumGetInt32(tid));
		}
		UnlockReleaseBuffer(buf);
	}
	if (BufferIsValid(vmbuffer))
		ReleaseBuffer(vmbuffer);
	FreeAccessStrategy(strategy);
	table_close(rel, AccessShareLock);
}

