/*-------------------------------------------------------------------------
 *
 * rowprobe.c
 *	  Probing a synced table's primary key (rowprobe.h).
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
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "identity.h"
#include "rowprobe.h"

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
	Oid			pkidx;
	bool		found;
	int			i;

	kz_as_restricted_begin(&sw, kz_rel_owner(c->relid), true);
	heap = table_open(c->relid, AccessShareLock);
	pkidx = RelationGetPrimaryKeyIndex(heap);
	if (!OidIsValid(pkidx))
		elog(ERROR, "synced table \"%s\" has no primary key", c->table_name);
	index = index_open(pkidx, AccessShareLock);

	/* the index's columns in index order, each equal to its key value */
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
	snap = RegisterSnapshot(GetLatestSnapshot());
	slot = table_slot_create(heap, NULL);
	scan = index_beginscan(heap, index, snap, index->rd_index->indnkeyatts, 0);
	index_rescan(scan, skey, index->rd_index->indnkeyatts, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snap);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	kz_as_restricted_end(&sw);
	return found;
}
