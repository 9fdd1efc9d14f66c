/*-------------------------------------------------------------------------
 *
 * reconcile.c
 *	  Seeding and repairing a synced table's bookkeeping (reconcile.h).
 *
 *	  The heap is read directly (attribute numbers match the relation's
 *	  descriptor even with dropped columns) with a fresh snapshot; keys and
 *	  bucket values are rendered as the table's owner under
 *	  SECURITY_RESTRICTED_OPERATION, the way core runs index expressions in
 *	  CREATE INDEX; changes are recorded in chunks, each in its own memory
 *	  context, so memory is bounded by a chunk.
 *
 *	  Repair compares each row with its changelog entry: the entry records
 *	  the row version it was captured from (row_xmin, the version's raw
 *	  xmin) and the bucket value.  A row whose entry is missing, older than
 *	  its version, or in another bucket is recorded again (a tombstone for
 *	  the bucket it left first); an entry whose row is gone gets a
 *	  tombstone.  A row is locked FOR SHARE before it is recorded, and is
 *	  skipped when a concurrent writer changed it (that writer's own capture
 *	  records it), so repair never supersedes a newer capture with an older
 *	  image.  Likewise an entry is locked before its row is found gone and
 *	  tombstoned, and skipped when a writer changed it meanwhile (a writer
 *	  that brings the row back replaces the entry first), so repair never
 *	  tombstones a row a concurrent writer re-inserted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "bookkeeping.h"
#include "bucketlabel.h"
#include "capture.h"
#include "entry_read.h"
#include "identity.h"
#include "reconcile.h"
#include "rowkey.h"
#include "rowprobe.h"
#include "spi.h"
#include "stamp.h"

#define KZ_RECONCILE_CHUNK	1000

/* Render one image as the table owner, restricted, under the rendering settings. */
static void
reconcile_image(const KzTableConf *conf, Oid owner, HeapTuple tup, TupleDesc desc, KzImage *img)
{
	KzUserSwitch sw;
	int			level;

	kz_as_restricted_begin(&sw, owner, false);
	level = kz_render_settings_begin();
	kz_capture_image(conf, tup, desc, img);
	kz_render_settings_end(level);
	kz_as_restricted_end(&sw);
}

int64
kz_reconcile_seed(const KzTableConf *conf)
{
	Oid			owner = kz_rel_owner(conf->relid);
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	Snapshot	snap;
	int64		total = 0;
	MemoryContext chunk_cxt;
	MemoryContext old;
	KzChange   *changes = palloc(sizeof(KzChange) * KZ_RECONCILE_CHUNK);
	int			n = 0;
	bool		more = true;

	chunk_cxt = AllocSetContextCreate(CurrentMemoryContext, "kizunasync seed",
									  ALLOCSET_DEFAULT_SIZES);
	rel = table_open(conf->relid, AccessShareLock);
	snap = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snap, 0, NULL);
	slot = table_slot_create(rel, NULL);

	while (more)
	{
		more = table_scan_getnextslot(scan, ForwardScanDirection, slot);
		if (more)
		{
			bool		should_free;
			HeapTuple	tup = ExecFetchSlotHeapTuple(slot, false, &should_free);
			KzImage		img;

			old = MemoryContextSwitchTo(chunk_cxt);
			reconcile_image(conf, owner, tup, RelationGetDescr(rel), &img);
			kz_capture_entry_change(&changes[n++], conf, &img,
									HeapTupleHeaderGetRawXmin(tup->t_data));
			changes[n - 1].no_row_elsewhere = true; /* the table has no entries yet */
			MemoryContextSwitchTo(old);
			if (should_free)
				heap_freetuple(tup);
		}
		if (n == KZ_RECONCILE_CHUNK || (!more && n > 0))
		{
			kz_stamp_record(changes, n);
			total += n;
			n = 0;
			MemoryContextReset(chunk_cxt);
		}
		CHECK_FOR_INTERRUPTS();
	}

	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snap);
	table_close(rel, NoLock);
	MemoryContextDelete(chunk_cxt);
	return total;
}

/* ------------------------------------------------------------ repair */

/* The row entry of (table, pk): its bucket label and row_xmin. */
typedef struct RepairEntry
{
	bool		found;
	char	   *bucket;			/* NULL for a NULL bucket value */
	bool		have_xmin;
	TransactionId row_xmin;
} RepairEntry;

static void
repair_entry(const KzTableConf *conf, const char *pk, RepairEntry *e)
{
	int64		seq;

	memset(e, 0, sizeof(*e));
	e->found = kz_entry_row_of(conf, pk, NULL, &e->bucket, &e->row_xmin, &seq);
	e->have_xmin = e->found && TransactionIdIsValid(e->row_xmin);
}

/*
 * The image a tombstone of an entry needs: its key, and the bucket value it
 * recorded, as its label gives it back (bucketlabel.h: equal under jsonb
 * equality to the value rendered then; no type's code runs).
 */
static void
repair_entry_image(const KzTableConf *conf, const char *pk, const char *label, KzImage *img)
{
	img->pk = pstrdup(pk);
	img->bucket = conf->bucket_column ? (label ? pstrdup(label) : NULL) : "";
	img->bucket_null = conf->bucket_column != NULL && label == NULL;
	img->bucket_json = NULL;
	if (conf->bucket_column != NULL && label != NULL)
	{
		Jsonb	   *jb = kz_label_value(label, kz_tableconf_bucket_kind(conf));

		img->bucket_json = JsonbToCString(NULL, &jb->root, VARSIZE(jb));
	}
}

static bool
repair_same_bucket(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/*
 * Lock the tuple version at tid in mode; false when a concurrent writer
 * updated or deleted it (and committed: a running one is waited for).
 */
static bool
repair_lock_tid(Relation rel, ItemPointer tid, Snapshot snap, LockTupleMode mode)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	TM_FailureData tmfd;
	TM_Result	res;

	res = table_tuple_lock(rel, tid, snap, slot, GetCurrentCommandId(false),
						   mode, LockWaitBlock, 0, &tmfd);
	ExecDropSingleTupleTableSlot(slot);
	switch (res)
	{
		case TM_Ok:
		case TM_SelfModified:
			return true;
		case TM_Updated:
		case TM_Deleted:
			return false;
		default:
			elog(ERROR, "unexpected tuple lock status %u on \"%s\"", res,
				 RelationGetRelationName(rel));
	}
	return false;				/* keep compiler quiet */
}

/* Phase 1: rows whose latest version the bookkeeping misses. */
static int64
repair_rows(const KzTableConf *conf, Oid owner, MemoryContext row_cxt)
{
	Relation	rel = table_open(conf->relid, RowShareLock);
	Snapshot	snap = RegisterSnapshot(GetLatestSnapshot());
	TableScanDesc scan = table_beginscan(rel, snap, 0, NULL);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	int64		total = 0;

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		MemoryContext old = MemoryContextSwitchTo(row_cxt);
		bool		should_free;
		HeapTuple	tup = ExecFetchSlotHeapTuple(slot, false, &should_free);
		TransactionId xmin = HeapTupleHeaderGetRawXmin(tup->t_data);
		KzImage		img;
		RepairEntry e;
		KzChange	changes[2];
		int			n = 0;

		reconcile_image(conf, owner, tup, RelationGetDescr(rel), &img);
		repair_entry(conf, img.pk, &e);
		if (!e.found || !e.have_xmin || e.row_xmin != xmin ||
			!repair_same_bucket(e.bucket, img.bucket))
		{
			if (repair_lock_tid(rel, &slot->tts_tid, snap, LockTupleShare))
			{
				/* under the lock: what the bookkeeping holds now */
				repair_entry(conf, img.pk, &e);
				if (e.found && !repair_same_bucket(e.bucket, img.bucket))
				{
					KzImage		left;

					repair_entry_image(conf, img.pk, e.bucket, &left);
					kz_capture_tombstone_change(&changes[n++], conf, &left);
				}
				kz_capture_entry_change(&changes[n++], conf, &img, xmin);
				/* the tombstone of the bucket its entry was in comes first */
				changes[n - 1].no_row_elsewhere = (n == 2);
				kz_stamp_record(changes, n);
				total += n;
			}
		}
		if (should_free)
			heap_freetuple(tup);
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
		CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snap);
	table_close(rel, NoLock);
	return total;
}

/*
 * Is the entry version at tid still the live one once locked, with its row
 * still gone (keyvals NULL: its key names no row at all)?  A writer that re-inserts the row replaces the entry in its
 * capture: the lock waits for that writer and then fails (the writer's
 * entry records the row).  Once the lock is held, such a writer waits for
 * this repair, so its entry gets a seq after the tombstone recorded here.
 */
static bool
repair_entry_orphaned(const KzTableConf *conf, Relation entries, ItemPointer tid,
					  Datum *keyvals)
{
	Snapshot	snap = RegisterSnapshot(GetLatestSnapshot());
	bool		locked = repair_lock_tid(entries, tid, snap, LockTupleExclusive);

	UnregisterSnapshot(snap);
	return locked && (keyvals == NULL || !kz_row_exists(conf, keyvals));
}

/* Phase 2: entries whose row is gone, a chunk of keys at a time. */
static int64
repair_vanished(const KzTableConf *conf, MemoryContext row_cxt)
{
	bytea	   *after = NULL;
	int64		total = 0;
	Datum	   *keyvals = palloc(sizeof(Datum) * conf->nkeys);
	Relation	entries = table_open(kz_entry_relid(), RowShareLock);
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext chunk_cxt = AllocSetContextCreate(outer, "kizunasync repair chunk",
													ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		KzEntryRef *refs;
		int			n;
		int			i;

		/* one chunk of keys at a time: the chunk's memory is freed before the next */
		MemoryContextSwitchTo(chunk_cxt);
		n = kz_entry_rows_of_table(conf, after, KZ_RECONCILE_CHUNK, &refs);
		MemoryContextSwitchTo(outer);
		if (n == 0)
			break;
		for (i = 0; i < n; i++)
		{
			MemoryContext old = MemoryContextSwitchTo(row_cxt);
			const char *pk = refs[i].pk;

			/*
			 * A key that is no longer a key text of the table (its column's
			 * type changed: text '05' became integer 5) names no row.
			 */
			bool		parsed = kz_rowkey_parse(conf, pk, keyvals);

			if ((!parsed || !kz_row_exists(conf, keyvals)) &&
				repair_entry_orphaned(conf, entries, &refs[i].tid, parsed ? keyvals : NULL))
			{
				KzImage		img;
				KzChange	ch;

				repair_entry_image(conf, pk, refs[i].label, &img);
				kz_capture_tombstone_change(&ch, conf, &img);
				kz_stamp_record(&ch, 1);
				if (conf->hlc)
					kz_capture_forget_row_hlc(conf, pk);
				total++;
			}
			MemoryContextSwitchTo(old);
			MemoryContextReset(row_cxt);
			CHECK_FOR_INTERRUPTS();
		}
		if (n < KZ_RECONCILE_CHUNK)
			break;
		if (after != NULL)
			pfree(after);
		after = DatumGetByteaPCopy(PointerGetDatum(refs[n - 1].key));
		MemoryContextReset(chunk_cxt);
	}
	MemoryContextDelete(chunk_cxt);
	table_close(entries, NoLock);
	return total;
}

int64
kz_reconcile_repair(const KzTableConf *conf)
{
	Oid			owner = kz_rel_owner(conf->relid);
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "kizunasync repair",
												  ALLOCSET_DEFAULT_SIZES);
	int64		total;

	total = repair_rows(conf, owner, row_cxt);
	total += repair_vanished(conf, row_cxt);
	MemoryContextDelete(row_cxt);
	return total;
}
