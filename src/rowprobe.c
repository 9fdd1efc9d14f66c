/*-------------------------------------------------------------------------
 *
 * rowprobe.c
 *	  Probing a synced table's primary key (rowprobe.h).
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
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "identity.h"
#include "rowkey.h"
#include "rowprobe.h"

/*
 * Scan keys for the primary-key index of t (opened as index): the index's
 * columns in index order, each equal to its key value.
 */
static void
rowprobe_keys(const KzTableConf *c, Relation index, Datum *keyvals, ScanKeyData *skey)
{
	int			i;

	for (i = 0; i < index->rd_index->indnkeyatts; i++)
	{
		AttrNumber	attnum = index->rd_index->indkey.values[i];
		Oid			opfamily = index->rd_opfamily[i];
		Oid			intype = index->rd_opcintype[i];
		Oid			eqop;
		int			k;

		for (k = 0; k < c->nkeys && c->key_attnums[k] != attnum; k++)
			;
		if (k == c->nkeys)
			elog(ERROR, "primary key of synced table \"%s\" is not its key", c->table_name);
		eqop = get_opfamily_member(opfamily, intype, intype, BTEqualStrategyNumber);
		if (!OidIsValid(eqop))
			elog(ERROR, "no equality operator for key column %d of \"%s\"", attnum, c->table_name);
		ScanKeyEntryInitialize(&skey[i], 0, i + 1, BTEqualStrategyNumber, intype,
							   index->rd_indcollation[i], get_opcode(eqop), keyvals[k]);
	}
}

/* Open t and its primary-key index as its owner, restricted. */
static void
rowprobe_open(const KzTableConf *c, KzUserSwitch *sw, Relation *heap, Relation *index)
{
	Oid			pkidx;

	kz_as_restricted_begin(sw, kz_rel_owner(c->relid), true);
	*heap = table_open(c->relid, AccessShareLock);
	pkidx = RelationGetPrimaryKeyIndex(*heap);
	if (!OidIsValid(pkidx))
		elog(ERROR, "synced table \"%s\" has no primary key", c->table_name);
	*index = index_open(pkidx, AccessShareLock);
}

static void
rowprobe_close(KzUserSwitch *sw, Relation heap, Relation index)
{
	index_close(index, NoLock);
	table_close(heap, NoLock);
	kz_as_restricted_end(sw);
}

bool
kz_row_exists(const KzTableConf *c, Datum *keyvals)
{
	KzUserSwitch sw;
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	ScanKeyData skey[INDEX_MAX_KEYS];
	Snapshot	snap;
	bool		found;

	rowprobe_open(c, &sw, &heap, &index);
	rowprobe_keys(c, index, keyvals, skey);
	snap = RegisterSnapshot(GetLatestSnapshot());
	slot = table_slot_create(heap, NULL);
	scan = index_beginscan(heap, index, snap, index->rd_index->indnkeyatts, 0);
	index_rescan(scan, skey, index->rd_index->indnkeyatts, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snap);
	rowprobe_close(&sw, heap, index);
	return found;
}

/*
 * Did the current transaction write this row version: insert it, or delete
 * or update it (a lock alone is no change)?  Read under the buffer's share
 * lock, as heapam reads tuple headers.
 */
static bool
rowprobe_version_ours(TupleTableSlot *slot)
{
	BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) slot;
	HeapTupleHeader h;
	bool		ours;

	LockBuffer(bslot->buffer, BUFFER_LOCK_SHARE);
	h = bslot->base.tuple->t_data;
	ours = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(h)) ||
		(!(h->t_infomask & HEAP_XMAX_INVALID) &&
		 !HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask) &&
		 TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetUpdateXid(h)));
	LockBuffer(bslot->buffer, BUFFER_LOCK_UNLOCK);
	return ours;
}

void
kz_rows_changed_in_xact(const KzTableConf *c, char **pks, int n, bool *changed)
{
	KzUserSwitch sw;
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	ScanKeyData skey[INDEX_MAX_KEYS];
	Datum	   *keyvals = palloc(sizeof(Datum) * c->nkeys);
	int			i;

	rowprobe_open(c, &sw, &heap, &index);
	slot = table_slot_create(heap, NULL);

	/* every version the index leads to, whoever may see it (HOT chains too) */
	scan = index_beginscan(heap, index, SnapshotAny, index->rd_index->indnkeyatts, 0);
	for (i = 0; i < n; i++)
	{
		changed[i] = false;
		if (!kz_rowkey_parse(c, pks[i], keyvals))
			continue;			/* not a key of this table: no row */
		rowprobe_keys(c, index, keyvals, skey);
		index_rescan(scan, skey, index->rd_index->indnkeyatts, NULL, 0);
		while (!changed[i] && index_getnext_slot(scan, ForwardScanDirection, slot))
			changed[i] = rowprobe_version_ours(slot);
		CHECK_FOR_INTERRUPTS();
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	rowprobe_close(&sw, heap, index);
	pfree(keyvals);
}
