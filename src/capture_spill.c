/*-------------------------------------------------------------------------
 *
 * capture_spill.c
 *	  The store of changes numbered at commit (capture_spill.h).
 *
 * The tuplestore is created in TopTransactionContext under the top
 * transaction's resource owner, so a subtransaction's end neither frees
 * its memory nor closes its files; the transaction's end does both.  Its
 * rows are (op, row_xmin, subid, table_name, pk, bucket_value, snapshot, tid,
 * no_row_elsewhere), all of built-in types: forming and reading them runs no code but
 * PostgreSQL's.
 *
 * Abort marks: (pos, subid) means the changes at positions below pos with
 * a subtransaction id >= subid are dead.  While subid is open, every
 * subtransaction started after it is nested in it, so "id >= subid" is
 * "subid or one of its children" for every change stored before its abort.
 * Consecutive marks at the same position merge, so there are at most as
 * many marks as stores of changes.  Reading compares each change with the
 * smallest subid of the marks after its position (a suffix minimum).
 *
 * Recorded marks: (pos, subid) means the changes below pos were recorded in
 * subid (or in a subtransaction since committed into it).  Recording inside
 * a subtransaction cannot empty the store: if that subtransaction aborts,
 * the entries go with it and the changes captured before it must be
 * recorded again.  So the store stays, reading starts at the last recorded
 * mark, and an abort pops the marks it made (every mark made after a
 * subtransaction began names it or one nested in it, so those are the last
 * ones); a commit hands them to the parent.  Marks only grow towards the
 * top of the stack, so there are at most as many as subtransactions open.
 * Recording at the top level (nothing left to abort but the transaction)
 * empties the store.
 *
 * The store is read through read pointer 1 and written with read pointer
 * 0 active, so that pointer 1, once at the end, moves on to what is
 * appended after it: a recording continues where the last one ended, and
 * rescans (skipping the recorded changes) only after an abort or an error
 * moved the recorded position away from it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"

#include "capture_spill.h"

#define SPILL_NATTS		9

typedef struct SpillMark
{
	int64		pos;
	SubTransactionId subid;
} SpillMark;

static Tuplestorestate *spill_store = NULL;
static TupleDesc spill_desc = NULL;
static TupleTableSlot *spill_slot = NULL;
static int64 spill_n = 0;
static SpillMark *spill_marks = NULL;
static int	spill_nmarks = 0;
static int	spill_maxmarks = 0;
static SpillMark *spill_recs = NULL;	/* recorded marks, a stack */
static int	spill_nrecs = 0;
static int	spill_maxrecs = 0;

/* reading, through read pointer SPILL_READER */
#define SPILL_WRITER 0
#define SPILL_READER 1
static int64 spill_readpos = 0;	/* where the reader is (-1: unknown) */
static int	spill_readmark = 0;
static SubTransactionId *spill_suffixmin = NULL;

static void
spill_open(void)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(TopTransactionContext);
	ResourceOwner oldowner = CurrentResourceOwner;

	CurrentResourceOwner = TopTransactionResourceOwner;
	spill_desc = CreateTemplateTupleDesc(SPILL_NATTS);
	TupleDescInitEntry(spill_desc, 1, "op", CHAROID, -1, 0);
	TupleDescInitEntry(spill_desc, 2, "row_xmin", INT8OID, -1, 0);
	TupleDescInitEntry(spill_desc, 3, "subid", INT8OID, -1, 0);
	TupleDescInitEntry(spill_desc, 4, "table_name", TEXTOID, -1, 0);
	TupleDescInitEntry(spill_desc, 5, "pk", TEXTOID, -1, 0);
	TupleDescInitEntry(spill_desc, 6, "bucket_value", TEXTOID, -1, 0);
	TupleDescInitEntry(spill_desc, 7, "snapshot", TEXTOID, -1, 0);
	TupleDescInitEntry(spill_desc, 8, "tid", INT4OID, -1, 0);
	TupleDescInitEntry(spill_desc, 9, "no_row_elsewhere", BOOLOID, -1, 0);
	spill_store = tuplestore_begin_heap(false, false, work_mem);
	/* a read that an error interrupted starts again (kz_spill_rewind) */
	tuplestore_set_eflags(spill_store, EXEC_FLAG_REWIND);
	if (tuplestore_alloc_read_pointer(spill_store, EXEC_FLAG_REWIND) != SPILL_READER)
		elog(ERROR, "unexpected read pointer of the store of deferred changes");
	spill_slot = MakeSingleTupleTableSlot(spill_desc, &TTSOpsMinimalTuple);
	CurrentResourceOwner = oldowner;
	MemoryContextSwitchTo(oldcxt);
}

static Datum
spill_text_or_null(const char *s, bool *isnull)
{
	*isnull = (s == NULL);
	return s ? CStringGetTextDatum(s) : (Datum) 0;
}

void
kz_spill_append(const KzChange *change, SubTransactionId subid)
{
	Datum		values[SPILL_NATTS];
	bool		nulls[SPILL_NATTS] = {false};
	HeapTuple	tup;
	ResourceOwner oldowner = CurrentResourceOwner;

	if (spill_store == NULL)
		spill_open();
	values[0] = CharGetDatum(change->op);
	values[1] = Int64GetDatum((int64) change->row_xmin);
	values[2] = Int64GetDatum((int64) subid);
	values[3] = spill_text_or_null(change->table_name, &nulls[3]);
	values[4] = spill_text_or_null(change->pk, &nulls[4]);
	values[5] = spill_text_or_null(change->bucket_value, &nulls[5]);
	values[6] = spill_text_or_null(change->snapshot, &nulls[6]);
	values[7] = Int32GetDatum(change->tid);
	values[8] = BoolGetDatum(change->no_row_elsewhere);
	tup = heap_form_tuple(spill_desc, values, nulls);
	CurrentResourceOwner = TopTransactionResourceOwner;
	PG_TRY();
	{
		tuplestore_select_read_pointer(spill_store, SPILL_WRITER);
		tuplestore_puttuple(spill_store, tup);
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	heap_freetuple(tup);
	spill_n++;
}

/* Append (spill_n, subid) to a growing array of marks. */
static void
spill_mark_append(SpillMark **marks, int *n, int *max, SubTransactionId subid)
{
	if (*n == *max)
	{
		*max = Max(16, *max * 2);
		*marks = *marks == NULL
			? MemoryContextAlloc(TopTransactionContext, sizeof(SpillMark) * *max)
			: repalloc(*marks, sizeof(SpillMark) * *max);
	}
	(*marks)[*n].pos = spill_n;
	(*marks)[*n].subid = subid;
	(*n)++;
}

/* Changes below this position are recorded. */
static int64
spill_recorded_pos(void)
{
	return spill_nrecs > 0 ? spill_recs[spill_nrecs - 1].pos : 0;
}

int64
kz_spill_unrecorded(void)
{
	return spill_n - spill_recorded_pos();
}

void
kz_spill_recorded(SubTransactionId subid)
{
	if (subid == TopSubTransactionId)
	{
		kz_spill_clear();
		return;
	}
	if (spill_nrecs > 0 && spill_recs[spill_nrecs - 1].subid == subid)
	{
		spill_recs[spill_nrecs - 1].pos = spill_n;
		return;
	}
	spill_mark_append(&spill_recs, &spill_nrecs, &spill_maxrecs, subid);
}

void
kz_spill_commit_sub(SubTransactionId subid, SubTransactionId parent)
{
	int			k = spill_nrecs;

	/* the marks of subid and its children are a suffix: they become one of parent */
	while (k > 0 && spill_recs[k - 1].subid >= subid)
		k--;
	if (k == spill_nrecs)
		return;
	if (k > 0 && spill_recs[k - 1].subid == parent)
		k--;
	spill_recs[k].pos = spill_recs[spill_nrecs - 1].pos;
	spill_recs[k].subid = parent;
	spill_nrecs = k + 1;
	/* recorded for good, with nothing after it: the store can go */
	if (parent == TopSubTransactionId && spill_recorded_pos() == spill_n)
		kz_spill_clear();
}

void
kz_spill_abort_sub(SubTransactionId subid)
{
	if (spill_n == 0)
		return;
	/* what subid and its children recorded is rolled back: read it again */
	while (spill_nrecs > 0 && spill_recs[spill_nrecs - 1].subid >= subid)
		spill_nrecs--;
	if (spill_nmarks > 0 && spill_marks[spill_nmarks - 1].pos == spill_n)
	{
		SpillMark  *last = &spill_marks[spill_nmarks - 1];

		last->subid = Min(last->subid, subid);
		return;
	}
	spill_mark_append(&spill_marks, &spill_nmarks, &spill_maxmarks, subid);
}

void
kz_spill_rewind(void)
{
	int			i;

	spill_readmark = 0;
	if (spill_store == NULL)
		return;
	tuplestore_select_read_pointer(spill_store, SPILL_READER);
	if (spill_readpos != spill_recorded_pos())
	{
		int64		skip = spill_recorded_pos();

		spill_readpos = -1;
		tuplestore_rescan(spill_store);
		if (skip > 0 && !tuplestore_skiptuples(spill_store, skip, true))
			elog(ERROR, "store of deferred changes holds fewer than " INT64_FORMAT " changes", skip);
		spill_readpos = skip;
	}
	if (spill_suffixmin != NULL)
		pfree(spill_suffixmin);
	spill_suffixmin = NULL;
	if (spill_nmarks == 0)
		return;
	spill_suffixmin = MemoryContextAlloc(TopTransactionContext,
										 sizeof(SubTransactionId) * spill_nmarks);
	spill_suffixmin[spill_nmarks - 1] = spill_marks[spill_nmarks - 1].subid;
	for (i = spill_nmarks - 2; i >= 0; i--)
		spill_suffixmin[i] = Min(spill_marks[i].subid, spill_suffixmin[i + 1]);
}

static char *
spill_cstring(int attno, MemoryContext cxt)
{
	bool		isnull;
	Datum		d = slot_getattr(spill_slot, attno, &isnull);
	char	   *s;
	MemoryContext old;

	if (isnull)
		return NULL;
	old = MemoryContextSwitchTo(cxt);
	s = TextDatumGetCString(d);
	MemoryContextSwitchTo(old);
	return s;
}

bool
kz_spill_next(KzChange *change, SubTransactionId *subid, MemoryContext cxt)
{
	bool		isnull;

	if (spill_store == NULL)
		return false;
	for (;;)
	{
		int64		pos = spill_readpos;
		bool		dead;

		CHECK_FOR_INTERRUPTS();	/* a long run of dead changes */
		tuplestore_select_read_pointer(spill_store, SPILL_READER);
		if (!tuplestore_gettupleslot(spill_store, true, false, spill_slot))
			return false;
		spill_readpos++;
		while (spill_readmark < spill_nmarks && spill_marks[spill_readmark].pos <= pos)
			spill_readmark++;
		*subid = (SubTransactionId) DatumGetInt64(slot_getattr(spill_slot, 3, &isnull));
		dead = spill_readmark < spill_nmarks && spill_suffixmin[spill_readmark] <= *subid;
		if (dead)
			continue;
		change->op = DatumGetChar(slot_getattr(spill_slot, 1, &isnull));
		change->row_xmin = (TransactionId) DatumGetInt64(slot_getattr(spill_slot, 2, &isnull));
		change->table_name = spill_cstring(4, cxt);
		change->pk = spill_cstring(5, cxt);
		change->bucket_value = spill_cstring(6, cxt);
		change->snapshot = spill_cstring(7, cxt);
		change->tid = DatumGetInt32(slot_getattr(spill_slot, 8, &isnull));
		change->no_row_elsewhere = DatumGetBool(slot_getattr(spill_slot, 9, &isnull));
		return true;
	}
}

void
kz_spill_clear(void)
{
	if (spill_store != NULL)
	{
		ResourceOwner oldowner = CurrentResourceOwner;

		ExecDropSingleTupleTableSlot(spill_slot);
		CurrentResourceOwner = TopTransactionResourceOwner;
		tuplestore_end(spill_store);
		CurrentResourceOwner = oldowner;
		FreeTupleDesc(spill_desc);
	}
	if (spill_marks != NULL)
		pfree(spill_marks);
	if (spill_suffixmin != NULL)
		pfree(spill_suffixmin);
	if (spill_recs != NULL)
		pfree(spill_recs);
	kz_spill_forget();
}

void
kz_spill_forget(void)
{
	spill_store = NULL;
	spill_desc = NULL;
	spill_slot = NULL;
	spill_n = 0;
	spill_marks = NULL;
	spill_nmarks = 0;
	spill_maxmarks = 0;
	spill_recs = NULL;
	spill_nrecs = 0;
	spill_maxrecs = 0;
	spill_suffixmin = NULL;
	spill_readpos = 0;
	spill_readmark = 0;
}
