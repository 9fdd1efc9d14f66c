/*-------------------------------------------------------------------------
 *
 * bookkeeping.c
 *	  Direct heap and index access to the bookkeeping tables (bookkeeping.h).
 *
 *	  Nothing here resolves a name through search_path, plans a query or
 *	  runs code that is not PostgreSQL's own: the tables are found by name
 *	  in schema kizunasync, the keys are text compared under the columns'
 *	  "C" collation, and the tables carry no triggers.  Writes follow what
 *	  the executor does for DML on a table without triggers or expression
 *	  indexes (heap_insert, index_insert with unique checks, heap_delete
 *	  with a wait on concurrent deleters).
 *
 *	  Lookups (a superseded entry, a ledger verdict) use SnapshotSelf:
 *	  committed and own tuples, as of now, and no predicate lock, since
 *	  they are the extension's reads, not the application's.  With an MVCC
 *	  snapshot, two SERIALIZABLE writers of other rows each read the index
 *	  page the other then inserted into, and one failed with 40001 where
 *	  the same writes to an unsynced table commit (decisions/0086).  Here
 *	  SnapshotSelf sees what the latest MVCC snapshot would: every change of
 *	  this transaction a lookup must see is an earlier command's (stamp.c
 *	  increments the command counter first), and another transaction's
 *	  tuple counts once it committed.
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
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "bookkeeping.h"

Oid
kz_bk_relid(const char *name)
{
	Oid			nsp = get_namespace_oid(KZ_SCHEMA, false);
	Oid			relid = get_relname_relid(name, nsp);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("bookkeeping relation \"%s.%s\" is missing", KZ_SCHEMA, name),
				 errhint("Reinstall the extension.")));
	return relid;
}

void
kz_bk_open(KzBkTable *t, const char *name)
{
	List	   *ids;
	ListCell   *lc;
	int			i = 0;

	t->heap = table_open(kz_bk_relid(name), RowExclusiveLock);
	ids = RelationGetIndexList(t->heap);
	t->nindexes = list_length(ids);
	t->indexes = palloc(sizeof(Relation) * Max(t->nindexes, 1));
	t->infos = palloc(sizeof(IndexInfo *) * Max(t->nindexes, 1));
	t->partial = palloc(sizeof(bool) * Max(t->nindexes, 1));
	foreach(lc, ids)
	{
		t->indexes[i] = index_open(lfirst_oid(lc), RowExclusiveLock);
		t->infos[i] = BuildIndexInfo(t->indexes[i]);
		if (t->infos[i]->ii_Expressions != NIL)
			elog(ERROR, "bookkeeping index \"%s\" has expressions",
				 RelationGetRelationName(t->indexes[i]));
		t->partial[i] = t->infos[i]->ii_Predicate != NIL;
		i++;
	}
	list_free(ids);
	t->slot = MakeSingleTupleTableSlot(RelationGetDescr(t->heap), &TTSOpsHeapTuple);
}

void
kz_bk_close(KzBkTable *t)
{
	int			i;

	ExecDropSingleTupleTableSlot(t->slot);
	for (i = 0; i < t->nindexes; i++)
		index_close(t->indexes[i], NoLock);
	table_close(t->heap, NoLock);
}

Relation
kz_bk_index(KzBkTable *t, const char *name)
{
	int			i;

	for (i = 0; i < t->nindexes; i++)
		if (strcmp(RelationGetRelationName(t->indexes[i]), name) == 0)
			return t->indexes[i];
	elog(ERROR, "bookkeeping index \"%s\" is missing", name);
	return NULL;				/* keep compiler quiet */
}

int
kz_bk_column(KzBkTable *t, const char *name)
{
	TupleDesc	desc = RelationGetDescr(t->heap);
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return i;
	}
	elog(ERROR, "bookkeeping table \"%s\" has no column \"%s\"",
		 RelationGetRelationName(t->heap), name);
	return -1;					/* keep compiler quiet */
}

/*
 * The first live tuple index finds with keys, stored in slot; seen with
 * SnapshotSelf (the header comment), so the read takes no predicate lock.
 */
static bool
bk_scan_first(KzBkTable *t, Relation index, int nkeys, ScanKey keys, TupleTableSlot *slot)
{
	IndexScanDesc scan = index_beginscan(t->heap, index, SnapshotSelf, nkeys, 0);
	bool		found;

	index_rescan(scan, keys, nkeys, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	return found;
}

/* The TID of the live tuple with that text key, or false. */
static bool
bk_find_unique(KzBkTable *t, Relation index, int nkeys, const char *const *keys,
			   ItemPointer tid)
{
	ScanKeyData skey[INDEX_MAX_KEYS];
	TupleTableSlot *slot = table_slot_create(t->heap, NULL);
	bool		found;
	int			i;

	for (i = 0; i < nkeys; i++)
		ScanKeyEntryInitialize(&skey[i], 0, i + 1, BTEqualStrategyNumber, InvalidOid,
							   index->rd_indcollation[i], F_TEXTEQ,
							   CStringGetTextDatum(keys[i]));
	found = bk_scan_first(t, index, nkeys, skey, slot);
	if (found)
		*tid = slot->tts_tid;
	ExecDropSingleTupleTableSlot(slot);
	return found;
}

HeapTuple
kz_bk_fetch(KzBkTable *t, Relation index, int nkeys, ScanKey keys)
{
	TupleTableSlot *slot = table_slot_create(t->heap, NULL);
	HeapTuple	tup = NULL;

	if (bk_scan_first(t, index, nkeys, keys, slot))
		tup = ExecCopySlotHeapTuple(slot);
	ExecDropSingleTupleTableSlot(slot);
	return tup;
}

bool
kz_bk_delete_unique(KzBkTable *t, Relation index, int nkeys, const char *const *keys)
{
	for (;;)
	{
		ItemPointerData tid;
		TM_FailureData tmfd;
		TM_Result	result;
		bool		found = bk_find_unique(t, index, nkeys, keys, &tid);

		if (!found)
			return false;
		result = heap_delete(t->heap, &tid, GetCurrentCommandId(true), InvalidSnapshot,
							 true, &tmfd, false);
		switch (result)
		{
			case TM_Ok:
				return true;
			case TM_SelfModified:
				/* deleted by this command already: nothing left to delete */
				return false;
			case TM_Updated:
			case TM_Deleted:
				/* a concurrent transaction removed it and committed: look again */
				CHECK_FOR_INTERRUPTS();
				continue;
			default:
				elog(ERROR, "unexpected heap_delete status %u on \"%s\"",
					 result, RelationGetRelationName(t->heap));
		}
	}
}

int
kz_bk_delete_all_nowait(KzBkTable *t, Relation index, int nkeys, const char *const *keys)
{
	ScanKeyData skey[INDEX_MAX_KEYS];
	TupleTableSlot *slot = table_slot_create(t->heap, NULL);
	IndexScanDesc scan;
	ItemPointerData tids[KZ_BK_MAX_DUPLICATES];
	int			ntids = 0;
	int			deleted = 0;
	int			i;

	for (i = 0; i < nkeys; i++)
		ScanKeyEntryInitialize(&skey[i], 0, i + 1, BTEqualStrategyNumber, InvalidOid,
							   index->rd_indcollation[i], F_TEXTEQ,
							   CStringGetTextDatum(keys[i]));

	/*
	 * The matches first, then the deletes, so that no heap buffer of the
	 * scan is pinned while a tuple is deleted.  More than a few matches are
	 * left to a later writer of the key (or the reap).
	 */
	scan = index_beginscan(t->heap, index, SnapshotSelf, nkeys, 0);
	index_rescan(scan, skey, nkeys, NULL, 0);
	while (ntids < KZ_BK_MAX_DUPLICATES && index_getnext_slot(scan, ForwardScanDirection, slot))
		tids[ntids++] = slot->tts_tid;
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);

	for (i = 0; i < ntids; i++)
	{
		TM_FailureData tmfd;
		TM_Result	result = heap_delete(t->heap, &tids[i], GetCurrentCommandId(true),
										 InvalidSnapshot, false, &tmfd, false);

		switch (result)
		{
			case TM_Ok:
				deleted++;
				break;
			case TM_SelfModified:	/* deleted by this command already */
			case TM_BeingModified:	/* another transaction deletes or locks it */
			case TM_Updated:
			case TM_Deleted:	/* a concurrent transaction removed it and committed */
				break;
			default:
				elog(ERROR, "unexpected heap_delete status %u on \"%s\"",
					 result, RelationGetRelationName(t->heap));
		}
	}
	return deleted;
}

HeapTuple
kz_bk_insert_first(KzBkTable *t, Datum *values, bool *nulls, const bool *first, bool *deferred)
{
	HeapTuple	tup = heap_form_tuple(RelationGetDescr(t->heap), values, nulls);
	int			i;

	*deferred = false;
	heap_insert(t->heap, tup, GetCurrentCommandId(true), 0, NULL);
	ExecStoreHeapTuple(tup, t->slot, false);
	for (i = 0; i < t->nindexes; i++)
	{
		Datum		ivalues[INDEX_MAX_KEYS];
		bool		inulls[INDEX_MAX_KEYS];
		IndexInfo  *info = t->infos[i];

		if (!first[i])
			continue;
		if (t->partial[i])
			elog(ERROR, "bookkeeping index \"%s\" is partial: not inserted first",
				 RelationGetRelationName(t->indexes[i]));

		/*
		 * UNIQUE_CHECK_PARTIAL never waits and never fails: a key some
		 * other tuple may hold (live, or inserted or deleted by a running
		 * transaction) only makes index_insert() answer false, and
		 * kz_bk_insert_rest() checks again where it may wait (as deferred
		 * constraints do).
		 */
		FormIndexDatum(info, t->slot, NULL, ivalues, inulls);
		if (!index_insert(t->indexes[i], ivalues, inulls, &tup->t_self, t->heap,
						  info->ii_Unique ? UNIQUE_CHECK_PARTIAL : UNIQUE_CHECK_NO,
						  false, info) && info->ii_Unique)
			*deferred = true;
	}
	ExecClearTuple(t->slot);
	return tup;
}

void
kz_bk_insert_rest(KzBkTable *t, HeapTuple tup, const bool *first, const bool *skip,
				  bool deferred)
{
	int			i;

	ExecStoreHeapTuple(tup, t->slot, false);
	for (i = 0; i < t->nindexes; i++)
	{
		Datum		ivalues[INDEX_MAX_KEYS];
		bool		inulls[INDEX_MAX_KEYS];
		IndexInfo  *info = t->infos[i];
		IndexUniqueCheck check;

		if (t->partial[i] && skip == NULL)
			elog(ERROR, "bookkeeping index \"%s\" is partial: its predicate is the caller's",
				 RelationGetRelationName(t->indexes[i]));
		if (skip != NULL && skip[i])
			continue;
		if (!first[i])
			check = info->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO;
		else if (deferred && info->ii_Unique)
			check = UNIQUE_CHECK_EXISTING;	/* waits, then 23505 if committed */
		else
			continue;
		FormIndexDatum(info, t->slot, NULL, ivalues, inulls);
		(void) index_insert(t->indexes[i], ivalues, inulls, &tup->t_self, t->heap, check,
							false, info);
	}
	ExecClearTuple(t->slot);
	heap_freetuple(tup);
}
