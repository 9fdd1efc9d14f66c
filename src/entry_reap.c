/*-------------------------------------------------------------------------
 *
 * entry_reap.c
 *	  The reap's walks over the tombstones in seq order (entry_reap.h),
 *	  through the entries' index of tombstones (seq, WHERE kind = 'd').
 *
 *	  Tombstones are numbered when they are written (decisions/0010), so
 *	  their seq order is nearly their deleted_at order: a walk in seq order
 *	  from where the last one stopped finds the due tombstones first and can
 *	  stop soon after the first one that is not due (KZ_REAP_LOOK_AHEAD).  A
 *	  tombstone numbered later still with an older deleted_at (its
 *	  transaction ran long before it deleted) is reaped by a later call,
 *	  once the walk reaches it.
 *
 *	  Each walk reads the seq index with a dirty snapshot, which also shows
 *	  the tuples other running transactions insert, delete or lock: such a
 *	  tombstone is never removed here and never waited for.  Removal is
 *	  heap_delete() without waiting; the index entries go with VACUUM, and
 *	  the next walk starts past them.  No tombstone appears below a walk's
 *	  position later: by Invariant S (decisions/0010) a seq's index entry is
 *	  in place before any higher seq is drawn, so a forward scan that returns
 *	  seq s has seen every tombstone below s that is still there.
 *
 *	  Nothing here resolves a name through search_path, plans a query or
 *	  runs code that is not PostgreSQL's own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "bookkeeping.h"
#include "entry_reap.h"

/*
 * A walk of a TTL stops after this many tombstones in a row that are not
 * due for it: seq order is nearly deleted_at order, not exactly (a
 * transaction that ran long before it deleted numbers its tombstones late;
 * a clock set back, or forward for a while, leaves a run of them out of
 * order), so the walk looks a little past the first young one, which keeps
 * its position, for due ones behind it.
 */
#define KZ_REAP_LOOK_AHEAD	1000

/* The attribute number of column name of rel (1-based). */
static AttrNumber
reap_attnum(Relation rel, const char *name)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return (AttrNumber) (i + 1);
	}
	elog(ERROR, "bookkeeping table \"%s\" has no column \"%s\"",
		 RelationGetRelationName(rel), name);
	return InvalidAttrNumber;	/* keep compiler quiet */
}

/* The table's entry of ttls, or NULL. */
static const KzReapTtl *
reap_table(const KzReapTtls *ttls, int32 tid)
{
	int			lo = 0,
				hi = ttls->ntables - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const KzReapTtl *t = &ttls->tables[mid];

		if (t->tid == tid)
			return t;
		if (tid < t->tid)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return NULL;
}

int64
kz_reap_walk(int32 ttl_days, TimestampTz cutoff, int64 from_seq, const KzReapTtls *ttls,
			 KzReapBudget *b)
{
	Relation	heap = table_open(kz_bk_relid("entries"), RowExclusiveLock);
	Relation	index = index_open(kz_bk_relid("entries_tomb_idx"), AccessShareLock);
	AttrNumber	a_seq = reap_attnum(heap, "seq");
	AttrNumber	a_tid = reap_attnum(heap, "tid");
	AttrNumber	a_deleted = reap_attnum(heap, "deleted_at");
	CommandId	cid = GetCurrentCommandId(true);
	SnapshotData dirty;
	ScanKeyData key;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	int64		next = from_seq;
	int64		kept = -1;		/* lowest seq passed over that this walk would remove */
	int			young = 0;		/* tombstones in a row not due for this walk */

	InitDirtySnapshot(dirty);
	ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(from_seq));
	scan = index_beginscan(heap, index, &dirty, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	slot = table_slot_create(heap, NULL);
	for (;;)
	{
		bool		isnull;
		int64		seq;
		const KzReapTtl *t;
		int32		ttl;
		TimestampTz deleted_at;
		bool		held;
		TM_Result	result;
		TM_FailureData tmfd;

		CHECK_FOR_INTERRUPTS();
		if (!index_getnext_slot(scan, ForwardScanDirection, slot))
			break;
		seq = DatumGetInt64(slot_getattr(slot, a_seq, &isnull));
		if (b->reaped >= b->max_rows || b->passed >= b->max_passed)
		{
			next = seq;
			break;
		}

		/* set by the dirty snapshot for this tuple: another transaction's insert or delete */
		held = TransactionIdIsValid(dirty.xmin) || TransactionIdIsValid(dirty.xmax);
		deleted_at = DatumGetTimestampTz(slot_getattr(slot, a_deleted, &isnull));
		t = reap_table(ttls, DatumGetInt32(slot_getattr(slot, a_tid, &isnull)));
		ttl = t ? t->ttl_days : ttls->default_days;
		if (ttl_days == 0)
		{
			/* the floor: stop at the first tombstone not removable now */
			if (held || deleted_at >= (t ? t->cutoff : ttls->default_cutoff))
			{
				next = seq;
				break;
			}
		}
		else
		{
			if (deleted_at >= cutoff)
			{
				/* not due for this walk: one of the young ones, past the due ones */
				if (++young > KZ_REAP_LOOK_AHEAD)
				{
					next = seq;
					break;
				}
				if (ttl <= ttl_days && kept < 0)
					kept = seq;
				b->passed++;
				next = seq + 1;
				continue;
			}
			young = 0;
			if (ttl > ttl_days || held)
			{
				/* a longer TTL's walk (or the floor) removes it later */
				if (ttl <= ttl_days && kept < 0)
					kept = seq;
				b->passed++;
				next = seq + 1;
				continue;
			}
		}
		result = heap_delete(heap, &slot->tts_tid, cid, InvalidSnapshot, false, &tmfd, false);
		if (result == TM_Ok)
		{
			b->reaped++;
			b->max_seq = Max(b->max_seq, seq);
		}
		else if (result == TM_BeingModified)
		{
			/* another transaction took it since the look */
			if (ttl_days == 0)
			{
				next = seq;
				break;
			}
			if (kept < 0)
				kept = seq;
			b->passed++;
		}
		else if (result != TM_Updated && result != TM_Deleted && result != TM_SelfModified)
			elog(ERROR, "unexpected heap_delete status %u on \"%s\"",
				 result, RelationGetRelationName(heap));
		next = seq + 1;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(heap, NoLock);
	if (kept >= 0 && kept < next)
		next = kept;
	return next;
}
