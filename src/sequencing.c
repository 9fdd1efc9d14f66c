/*-------------------------------------------------------------------------
 *
 * sequencing.c
 *	  Commit-safe sequencing: the fence, recording a numbered entry, and the
 *	  visibility horizon (high-water + holes) of a pull.
 *
 * Invariant F (the fence): every seq s <= L, where L is the sequence's
 * high-water read under the fence, already has its entry tuple in the heap
 * and in the seq index of changelog or tombstones (committed, in flight or
 * aborted).  Writers hold RowExclusiveLock on kizunasync.seq_fence from
 * just before nextval() until their entry insert has returned; a pull takes
 * ShareLock on it for the instant it reads L.  ShareLock conflicts with
 * RowExclusiveLock, so when the pull holds it no writer is between "drew a
 * seq" and "inserted its entry"; writers do not conflict with each other,
 * and the lock is released right after the insert, never held to commit.
 *
 * Holes: an entry tuple with seq in (in_hw, L] (or equal to an incoming
 * hole) whose inserting transaction is not visible to the pull's snapshot
 * but is still running, prepared, or committed after the snapshot, is a
 * hole.  The full argument is in decisions/0010-sequencing.md.
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
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "kizunasync.h"
#include "capture.h"
#include "sequencing.h"

/*
 * Test-only wait point: when non-zero, a writer that has drawn a seq waits,
 * before inserting its entry (so inside the fence), for a shared
 * transaction-level advisory lock on this key.  A test session holding the
 * key exclusively freezes the writer in the window the fence protects.
 */
int			kz_debug_wait_after_draw = 0;

/*
 * Upper bound on index tuples the horizon visits in one range scan.  When a
 * range holds more, the high-water is lowered to the last seq fully
 * classified (nothing above it is claimed), so a far-behind cursor costs a
 * bounded amount per pull.
 */
#define KZ_HORIZON_SCAN_BUDGET	100000

PG_FUNCTION_INFO_V1(kz_horizon_sql);

void
kz_sequencing_define_gucs(void)
{
	DefineCustomIntVariable("kizunasync.debug_wait_after_draw",
							"Test only: advisory lock key a writer waits on after drawing a seq.",
							"0 (the default) disables the wait point.",
							&kz_debug_wait_after_draw,
							0, 0, INT_MAX,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
}

/* ---------------------------------------------------------------- helpers */

static Oid
kz_relid(const char *name)
{
	Oid			nsp = get_namespace_oid(KZ_SCHEMA, false);
	Oid			relid = get_relname_relid(name, nsp);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("kizunasync: bookkeeping relation \"%s.%s\" is missing", KZ_SCHEMA, name),
				 errhint("Reinstall the extension.")));
	return relid;
}

static Oid
kz_rel_owner(Oid relid)
{
	HeapTuple	tp = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tp))->relowner;
	ReleaseSysCache(tp);
	return owner;
}

/* ---------------------------------------------------------------- writers */

static SPIPlanPtr plan_del_changelog = NULL;
static SPIPlanPtr plan_del_tombstone = NULL;
static SPIPlanPtr plan_ins_changelog = NULL;
static SPIPlanPtr plan_ins_tombstone = NULL;

static SPIPlanPtr
kz_keep_plan(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "kizunasync: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "kizunasync: SPI_keepplan failed");
	return plan;
}

static void
kz_prepare_plans(void)
{
	Oid			t3[3] = {TEXTOID, TEXTOID, TEXTOID};
	Oid			ins_cl[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Oid			ins_tb[5] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};

	if (plan_del_changelog == NULL)
		plan_del_changelog = kz_keep_plan(
			"DELETE FROM kizunasync.changelog WHERE table_name = $1 AND pk = $2", 2, t3);
	if (plan_del_tombstone == NULL)
		plan_del_tombstone = kz_keep_plan(
			"DELETE FROM kizunasync.tombstones "
			"WHERE table_name = $1 AND pk = $2 AND bucket_value = $3", 3, t3);
	if (plan_ins_changelog == NULL)
		plan_ins_changelog = kz_keep_plan(
			"INSERT INTO kizunasync.changelog (seq, table_name, pk, bucket_value) "
			"VALUES ($1, $2, $3, $4)", 4, ins_cl);
	if (plan_ins_tombstone == NULL)
		plan_ins_tombstone = kz_keep_plan(
			"INSERT INTO kizunasync.tombstones "
			"(seq, table_name, pk, bucket_value, bucket_snapshot, deleted_at) "
			"VALUES ($1, $2, $3, $4, $5::jsonb, pg_catalog.now())", 5, ins_tb);
}

static void
kz_exec(SPIPlanPtr plan, Datum *values, const char *nulls, int expect)
{
	int			ret = SPI_execute_plan(plan, values, nulls, false, 0);

	if (ret != expect)
		elog(ERROR, "kizunasync: bookkeeping statement failed: %s", SPI_result_code_string(ret));
}

int64
kz_record_changes(const KzChange *changes, int n)
{
	Oid			fence = kz_relid("seq_fence");
	Oid			seqid = kz_relid("change_seq");
	Oid			save_userid;
	int			save_sec;
	int64		seq = 0;
	int			i;

	if (n <= 0)
		return 0;

	/* bookkeeping is written as its owner, whatever role the caller runs as */
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(kz_rel_owner(fence), save_sec | SECURITY_LOCAL_USERID_CHANGE);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	kz_prepare_plans();

	for (i = 0; i < n; i++)
	{
		const KzChange *ch = &changes[i];
		Datum		v[5];
		char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

		/*
		 * Outside the fence: remove what this entry supersedes, so that the
		 * insert's unique check below meets only our own deleted tuple and
		 * never waits for another transaction while inside the fence.
		 */
		v[0] = CStringGetTextDatum(ch->table_name);
		v[1] = CStringGetTextDatum(ch->pk);
		kz_exec(plan_del_changelog, v, nulls, SPI_OK_DELETE);
		if (ch->op == 'd')
		{
			v[2] = CStringGetTextDatum(ch->bucket_value);
			kz_exec(plan_del_tombstone, v, nulls, SPI_OK_DELETE);
		}

		/* The fence: draw + insert, with no pull reading L in between. */
		LockRelationOid(fence, RowExclusiveLock);
		seq = nextval_internal(seqid, false);

		if (kz_debug_wait_after_draw != 0)
			DirectFunctionCall1(pg_advisory_xact_lock_shared_int8,
								Int64GetDatum((int64) kz_debug_wait_after_draw));

		v[0] = Int64GetDatum(seq);
		v[1] = CStringGetTextDatum(ch->table_name);
		v[2] = CStringGetTextDatum(ch->pk);
		if (ch->op == 'd')
		{
			v[3] = CStringGetTextDatum(ch->bucket_value);
			v[4] = CStringGetTextDatum(ch->snapshot);
			kz_exec(plan_ins_tombstone, v, nulls, SPI_OK_INSERT);
		}
		else
		{
			if (ch->bucket_value == NULL)
			{
				v[3] = (Datum) 0;
				nulls[3] = 'n';
			}
			else
				v[3] = CStringGetTextDatum(ch->bucket_value);
			kz_exec(plan_ins_changelog, v, nulls, SPI_OK_INSERT);
		}
		UnlockRelationOid(fence, RowExclusiveLock);
	}

	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec);
	return seq;
}

/* ---------------------------------------------------------------- horizon */

/* What a pull with snapshot snap makes of an entry tuple inserted by xmin. */
typedef enum KzEntryState
{
	KZ_ENTRY_DEAD,				/* inserter aborted (or crashed): never delivered */
	KZ_ENTRY_VISIBLE,			/* committed and visible in snap */
	KZ_ENTRY_PENDING			/* running, prepared, or committed after snap */
} KzEntryState;

static KzEntryState
kz_entry_state(TransactionId xmin, Snapshot snap)
{
	if (!TransactionIdIsNormal(xmin))
		return KZ_ENTRY_VISIBLE;	/* frozen or bootstrap */
	if (TransactionIdIsCurrentTransactionId(xmin))
		return KZ_ENTRY_VISIBLE;	/* our own change */
	if (XidInMVCCSnapshot(xmin, snap))
	{
		/* not visible to snap; in progress first: a running xid has no clog state */
		if (TransactionIdIsInProgress(xmin))
			return KZ_ENTRY_PENDING;
		if (TransactionIdDidCommit(xmin))
			return KZ_ENTRY_PENDING;	/* committed after snap: next pull */
		return KZ_ENTRY_DEAD;
	}
	/* ended before snap was taken */
	return TransactionIdDidCommit(xmin) ? KZ_ENTRY_VISIBLE : KZ_ENTRY_DEAD;
}

/* kz_entry_state of the entry tuple in slot (its inserting xid). */
static KzEntryState
slot_entry_state(TupleTableSlot *slot, Snapshot snap)
{
	bool		should_free;
	HeapTuple	tup = ExecFetchSlotHeapTuple(slot, false, &should_free);
	KzEntryState st = kz_entry_state(HeapTupleHeaderGetXmin(tup->t_data), snap);

	if (should_free)
		heap_freetuple(tup);
	return st;
}

typedef struct KzSeqList
{
	int64	   *v;
	int			n;
	int			cap;
} KzSeqList;

static void
seqlist_add(KzSeqList *l, int64 s)
{
	if (l->n > 0 && l->v[l->n - 1] == s)
		return;
	if (l->n == l->cap)
	{
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = l->v ? repalloc(l->v, sizeof(int64) * l->cap) : palloc(sizeof(int64) * l->cap);
	}
	l->v[l->n++] = s;
}

/*
 * Scan the seq index of one bookkeeping table for seqs in [lo, *hi] with
 * SnapshotAny: add every pending seq to holes and raise *max_visible to the
 * highest seq with a visible entry.  When more than budget index tuples are
 * met, *hi is lowered to the last seq fully classified.
 */
static void
kz_scan_range(Oid heapid, Oid indexid, int64 lo, int64 *hi, Snapshot snap,
			  int budget, KzSeqList *holes, int64 *max_visible)
{
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	ScanKeyData key[2];
	int64		cur = 0;
	KzEntryState cur_state = KZ_ENTRY_DEAD;
	bool		have_cur = false;
	int			seen = 0;

	if (lo > *hi)
		return;

	heap = table_open(heapid, AccessShareLock);
	index = index_open(indexid, AccessShareLock);
	slot = table_slot_create(heap, NULL);

	ScanKeyInit(&key[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(lo));
	ScanKeyInit(&key[1], 1, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(*hi));
	scan = index_beginscan(heap, index, SnapshotAny, 2, 0);
	index_rescan(scan, key, 2, NULL, 0);

	for (;;)
	{
		bool		more = index_getnext_slot(scan, ForwardScanDirection, slot);
		int64		s = 0;

		if (more)
		{
			bool		isnull;

			s = DatumGetInt64(slot_getattr(slot, 1, &isnull));
		}
		/* a seq is finished: record it */
		if (have_cur && (!more || s != cur))
		{
			if (cur_state == KZ_ENTRY_PENDING)
				seqlist_add(holes, cur);
			else if (cur_state == KZ_ENTRY_VISIBLE && cur > *max_visible)
				*max_visible = cur;
			cur_state = KZ_ENTRY_DEAD;
			if (more && seen >= budget)
			{
				*hi = cur;		/* everything <= cur is classified */
				break;
			}
		}
		if (!more)
			break;

		cur = s;
		have_cur = true;
		seen++;
		if (cur_state != KZ_ENTRY_PENDING)
		{
			KzEntryState st = slot_entry_state(slot, snap);

			/* several versions of one seq: pending wins, then visible */
			if (st > cur_state)
				cur_state = st;
		}
		CHECK_FOR_INTERRUPTS();
	}

	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/* Read the change sequence's high-water (0 before the first nextval). */
static int64
kz_read_high_water(Oid seqid)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		result;
	Oid			save_userid;
	int			save_sec;

	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(kz_rel_owner(seqid), save_sec | SECURITY_LOCAL_USERID_CHANGE);
	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = ObjectIdGetDatum(seqid);
	fcinfo->args[0].isnull = false;
	result = pg_sequence_last_value(fcinfo);
	SetUserIdAndSecContext(save_userid, save_sec);
	return fcinfo->isnull ? 0 : DatumGetInt64(result);
}

void
kz_horizon_compute(int64 in_hw, const int64 *in_holes, int n_in_holes,
				   Snapshot snap, int max_holes, KzHorizon *out)
{
	Oid			fence = kz_relid("seq_fence");
	Oid			seqid = kz_relid("change_seq");
	Oid			cl = kz_relid("changelog");
	Oid			cl_idx = kz_relid("changelog_pkey");
	Oid			tb = kz_relid("tombstones");
	Oid			tb_idx = kz_relid("tombstones_pkey");
	int64		L;
	int64		hw;
	KzSeqList	holes = {NULL, 0, 0};
	KzSeqList	fresh_cl = {NULL, 0, 0};
	KzSeqList	fresh_tb = {NULL, 0, 0};
	int			i;

	Assert(snap != NULL && IsMVCCSnapshot(snap));
	if (in_hw < 0)
		in_hw = 0;

	/*
	 * Read L under the fence: waits for every writer between nextval() and
	 * its entry insert, and holds new ones off for the instant of the read.
	 */
	LockRelationOid(fence, ShareLock);
	L = kz_read_high_water(seqid);
	UnlockRelationOid(fence, ShareLock);

	/* incoming holes still pending stay holes; the others are resolved */
	if (n_in_holes > 0)
	{
		int64	   *sorted = palloc(sizeof(int64) * n_in_holes);

		memcpy(sorted, in_holes, sizeof(int64) * n_in_holes);
		qsort(sorted, n_in_holes, sizeof(int64), cmp_int64);
		for (i = 0; i < n_in_holes; i++)
		{
			int64		h = sorted[i];
			int64		h_hi = h;
			int64		ignored = 0;
			int			before;

			if (h < 1 || h >= in_hw || (i > 0 && sorted[i - 1] == h))
				continue;
			before = holes.n;
			kz_scan_range(cl, cl_idx, h, &h_hi, snap, INT_MAX, &holes, &ignored);
			if (holes.n == before)
				kz_scan_range(tb, tb_idx, h, &h_hi, snap, INT_MAX, &holes, &ignored);
		}
	}

	/*
	 * The new range (in_hw, L].  The new high-water is the highest seq in it
	 * with a visible entry (as the protocol's oracle does): pending seqs
	 * below it become holes, pending or aborted seqs above it are simply not
	 * claimed yet.
	 */
	hw = in_hw;
	if (L > in_hw)
	{
		int64		hi = L;
		int64		max_visible = in_hw;

		kz_scan_range(cl, cl_idx, in_hw + 1, &hi, snap, KZ_HORIZON_SCAN_BUDGET,
					  &fresh_cl, &max_visible);
		kz_scan_range(tb, tb_idx, in_hw + 1, &hi, snap, KZ_HORIZON_SCAN_BUDGET,
					  &fresh_tb, &max_visible);
		/* the tombstone scan may have lowered hi below changelog results */
		if (max_visible > hi)
		{
			/* recompute: only seqs <= hi count */
			max_visible = in_hw;
			fresh_cl.n = 0;
			kz_scan_range(cl, cl_idx, in_hw + 1, &hi, snap, INT_MAX, &fresh_cl, &max_visible);
			fresh_tb.n = 0;
			kz_scan_range(tb, tb_idx, in_hw + 1, &hi, snap, INT_MAX, &fresh_tb, &max_visible);
		}
		hw = max_visible;
		for (i = 0; i < fresh_cl.n; i++)
			if (fresh_cl.v[i] < hw)
				seqlist_add(&holes, fresh_cl.v[i]);
		for (i = 0; i < fresh_tb.n; i++)
			if (fresh_tb.v[i] < hw)
				seqlist_add(&holes, fresh_tb.v[i]);
	}

	if (holes.n > 1)
	{
		int			j = 0;

		qsort(holes.v, holes.n, sizeof(int64), cmp_int64);
		for (i = 0; i < holes.n; i++)
			if (j == 0 || holes.v[j - 1] != holes.v[i])
				holes.v[j++] = holes.v[i];
		holes.n = j;
	}

	/*
	 * Too many holes: lower the high-water to just below the first one that
	 * does not fit, so nothing above the new high-water is claimed.  The
	 * high-water never goes below in_hw; holes below it (incoming ones still
	 * pending) are all kept.
	 */
	if (max_holes < 0)
		max_holes = 0;
	if (holes.n > max_holes)
	{
		int64		cut = holes.v[max_holes] - 1;

		if (cut < in_hw)
		{
			cut = in_hw;
			for (i = 0; i < holes.n && holes.v[i] <= in_hw; i++)
				;
			holes.n = i;
		}
		else
			holes.n = max_holes;
		hw = cut;
	}

	out->high_water = hw;
	out->nholes = holes.n;
	out->holes = holes.n > 0 ? holes.v : NULL;
}

/* ------------------------------------------------- page-bounded horizon */

int64
kz_seq_fenced_high_water(void)
{
	Oid			fence = kz_relid("seq_fence");
	Oid			seqid = kz_relid("change_seq");
	int64		L;

	LockRelationOid(fence, ShareLock);
	L = kz_read_high_water(seqid);
	UnlockRelationOid(fence, ShareLock);
	return L;
}

static void
seqlist_sort_unique(KzSeqList *l)
{
	int			i,
				j = 0;

	if (l->n < 2)
		return;
	qsort(l->v, l->n, sizeof(int64), cmp_int64);
	for (i = 0; i < l->n; i++)
		if (j == 0 || l->v[j - 1] != l->v[i])
			l->v[j++] = l->v[i];
	l->n = j;
}

int
kz_holes_recheck(const int64 *in_holes, int n_in_holes, int64 below,
				 Snapshot snap, int64 **out)
{
	Oid			cl = kz_relid("changelog");
	Oid			cl_idx = kz_relid("changelog_pkey");
	Oid			tb = kz_relid("tombstones");
	Oid			tb_idx = kz_relid("tombstones_pkey");
	KzSeqList	holes = {NULL, 0, 0};
	int64	   *sorted;
	int			i;

	*out = NULL;
	if (n_in_holes <= 0)
		return 0;
	sorted = palloc(sizeof(int64) * n_in_holes);
	memcpy(sorted, in_holes, sizeof(int64) * n_in_holes);
	qsort(sorted, n_in_holes, sizeof(int64), cmp_int64);
	for (i = 0; i < n_in_holes; i++)
	{
		int64		h = sorted[i];
		int64		h_hi = h;
		int64		ignored = 0;
		int			before;

		if (h < 1 || h >= below || (i > 0 && sorted[i - 1] == h))
			continue;
		before = holes.n;
		kz_scan_range(cl, cl_idx, h, &h_hi, snap, INT_MAX, &holes, &ignored);
		if (holes.n == before)
			kz_scan_range(tb, tb_idx, h, &h_hi, snap, INT_MAX, &holes, &ignored);
	}
	pfree(sorted);
	*out = holes.v;
	return holes.n;
}

/*
 * Highest seq in (floor, L] of one bookkeeping table whose entry is visible
 * in snap, or floor: a backward scan of the seq index from L that stops at
 * the first seq (all its tuple versions taken together, pending winning over
 * visible, as kz_scan_range does) classified VISIBLE.  It reads only the
 * pending and dead tuples above the answer, at most KZ_HORIZON_SCAN_BUDGET of
 * them: past that it answers just below the lowest seq examined.
 */
static int64
kz_scan_highest_visible(Oid heapid, Oid indexid, int64 floor, int64 L, Snapshot snap)
{
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	ScanKeyData key[2];
	int64		cur = 0;
	KzEntryState cur_state = KZ_ENTRY_DEAD;
	bool		have_cur = false;
	int64		result = floor;
	int			seen = 0;

	if (L <= floor)
		return floor;

	heap = table_open(heapid, AccessShareLock);
	index = index_open(indexid, AccessShareLock);
	slot = table_slot_create(heap, NULL);

	ScanKeyInit(&key[0], 1, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(floor));
	ScanKeyInit(&key[1], 1, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(L));
	scan = index_beginscan(heap, index, SnapshotAny, 2, 0);
	index_rescan(scan, key, 2, NULL, 0);

	for (;;)
	{
		bool		more = index_getnext_slot(scan, BackwardScanDirection, slot);
		int64		s = 0;

		if (more)
		{
			bool		isnull;

			s = DatumGetInt64(slot_getattr(slot, 1, &isnull));
		}
		if (have_cur && (!more || s != cur))
		{
			if (cur_state == KZ_ENTRY_VISIBLE)
			{
				result = cur;
				break;
			}
			cur_state = KZ_ENTRY_DEAD;
			if (more && seen >= KZ_HORIZON_SCAN_BUDGET)
			{
				/*
				 * Nothing in [cur, L] is visible, and more than the budget
				 * lies above the answer (a huge transaction in flight): stop
				 * here.  Any high-water <= L is correct for a page that read
				 * every candidate up to L (its holes are listed below it);
				 * the highest visible one only keeps the list short.
				 */
				result = Max(floor, cur - 1);
				break;
			}
		}
		if (!more)
			break;
		cur = s;
		have_cur = true;
		seen++;
		if (cur_state != KZ_ENTRY_PENDING)
		{
			KzEntryState st = slot_entry_state(slot, snap);

			if (st > cur_state)
				cur_state = st;
		}
		CHECK_FOR_INTERRUPTS();
	}

	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	return result;
}

int64
kz_highest_visible(int64 floor, int64 L, Snapshot snap)
{
	int64		a = kz_scan_highest_visible(kz_relid("changelog"), kz_relid("changelog_pkey"),
											floor, L, snap);
	int64		b = kz_scan_highest_visible(kz_relid("tombstones"), kz_relid("tombstones_pkey"),
											floor, L, snap);

	return Max(a, b);
}

/*
 * Add to holes every pending seq in [lo, hi] among the entries of one
 * (table, bucket value) pair, through an index on (table_name, bucket_value,
 * seq), with SnapshotAny.  A seq any of whose tuple versions is pending is a
 * hole (pending wins), so versions need no grouping here.
 */
static void
kz_scan_bucket(Relation heap, Relation index, TupleTableSlot *slot,
			   const KzBucketPair *pair, int64 lo, int64 hi, Snapshot snap,
			   KzSeqList *holes)
{
	IndexScanDesc scan;
	ScanKeyData key[4];

	ScanKeyEntryInitialize(&key[0], 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ,
						   CStringGetTextDatum(pair->table_name));
	ScanKeyEntryInitialize(&key[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[1], F_TEXTEQ,
						   CStringGetTextDatum(pair->bucket_value));
	ScanKeyInit(&key[2], 3, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(lo));
	ScanKeyInit(&key[3], 3, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(hi));
	scan = index_beginscan(heap, index, SnapshotAny, 4, 0);
	index_rescan(scan, key, 4, NULL, 0);

	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;

		if (slot_entry_state(slot, snap) == KZ_ENTRY_PENDING)
			seqlist_add(holes, DatumGetInt64(slot_getattr(slot, 1, &isnull)));
		CHECK_FOR_INTERRUPTS();
	}
	index_endscan(scan);
}

int
kz_bucket_holes(const KzBucketPair *pairs, int npairs, int64 lo, int64 hi,
				Snapshot snap, int64 **out)
{
	static const char *const rels[2][2] = {
		{"changelog", "changelog_bucket_idx"},
		{"tombstones", "tombstones_bucket_idx"}
	};
	KzSeqList	holes = {NULL, 0, 0};
	int			r,
				i;

	*out = NULL;
	if (lo < 1)
		lo = 1;
	if (npairs <= 0 || lo > hi)
		return 0;
	for (r = 0; r < 2; r++)
	{
		Relation	heap = table_open(kz_relid(rels[r][0]), AccessShareLock);
		Relation	index = index_open(kz_relid(rels[r][1]), AccessShareLock);
		TupleTableSlot *slot = table_slot_create(heap, NULL);

		for (i = 0; i < npairs; i++)
			kz_scan_bucket(heap, index, slot, &pairs[i], lo, hi, snap, &holes);
		ExecDropSingleTupleTableSlot(slot);
		index_close(index, AccessShareLock);
		table_close(heap, AccessShareLock);
	}
	seqlist_sort_unique(&holes);
	*out = holes.v;
	return holes.n;
}

/*
 * kizunasync._horizon(cursor text, max_holes integer DEFAULT 100) RETURNS text
 *
 * Test helper (no grants): the checkpoint token kz_horizon_compute gives for
 * an incoming "hw" or "hw~h1.h2" cursor under the statement's snapshot.
 */
Datum
kz_horizon_sql(PG_FUNCTION_ARGS)
{
	char	   *cur = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int			max_holes = PG_GETARG_INT32(1);
	char	   *tilde = strchr(cur, '~');
	int64		in_hw;
	int64	   *in_holes = NULL;
	int			n = 0;
	KzHorizon	h;
	StringInfoData buf;
	int			i;

	if (tilde)
		*tilde = '\0';
	in_hw = DatumGetInt64(DirectFunctionCall1(int8in, CStringGetDatum(cur)));
	if (tilde)
	{
		char	   *p = tilde + 1;
		char	   *tok;

		in_holes = palloc(sizeof(int64) * (strlen(p) / 2 + 1));
		for (tok = strtok(p, "."); tok; tok = strtok(NULL, "."))
			in_holes[n++] = DatumGetInt64(DirectFunctionCall1(int8in, CStringGetDatum(tok)));
	}

	kz_horizon_compute(in_hw, in_holes, n, GetActiveSnapshot(), max_holes, &h);

	initStringInfo(&buf);
	appendStringInfo(&buf, INT64_FORMAT, h.high_water);
	for (i = 0; i < h.nholes; i++)
		appendStringInfo(&buf, "%c" INT64_FORMAT, i == 0 ? '~' : '.', h.holes[i]);
	PG_RETURN_TEXT_P(cstring_to_text(buf.data));
}
