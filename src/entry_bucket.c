/*-------------------------------------------------------------------------
 *
 * entry_bucket.c
 *	  Bucket numbers and their labels (entry_bucket.h; decisions/0092).
 *
 * The bucket number is a hash so that neither the write path nor a pull
 * has to look it up.  Two labels of one table must never share a number:
 * a pull reads a bucket's entries by number and turns a row entry of a
 * granted bucket whose row the caller cannot see into a tombstone with its
 * key, and push's DELETE_WINS reads a tombstone's bucket by number, so a
 * shared number would hand one bucket's keys to the other's members
 * (decisions/0092, "Bucket numbers").  The hash is therefore keyed:
 * SipHash-2-4 (siphash.c) of the label with the table's random 128-bit
 * synced_tables.bucket_key, which only the extension's owner can read.
 * Without the key nobody can compute a number, let alone pick a label
 * whose number another label has; by chance two of n labels share one
 * with a probability of about n^2 / 2^64.  Should it happen, the write
 * path refuses the second label (bucket_record) rather than mix them.
 * kizunasync.buckets keeps each number's label for what needs the text
 * back (repair's tombstone of a vanished row, push's DELETE_WINS bucket,
 * the operator views): the write path adds a label the first time its
 * transaction records an entry under it, unless this backend knows it
 * committed; two transactions that meet a new label at once may both add
 * it (no unique index: nobody waits), and readers take any row of the
 * (tid, number).
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
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "bookkeeping.h"
#include "entry_bucket.h"
#include "siphash.h"


/*
 * The tables' bucket keys this backend has read, by synced_tables.id.  A
 * key never changes while its table is synced (a table synced again gets
 * a new id), so the cache is only dropped when synced_tables changes (its
 * relcache invalidation, sent by every change) and when it grows past
 * KZ_KEY_CACHE tables.
 */
#define KZ_KEY_CACHE		1024

typedef struct KeyEnt
{
	int32		tid;
	uint8		key[KZ_SIPHASH_KEY_LEN];
} KeyEnt;

static HTAB *key_cache = NULL;
static MemoryContext key_cxt = NULL;
static Oid	key_rel = InvalidOid;

static void entry_callbacks_register(void);

static void
key_cache_reset(void)
{
	if (key_cxt != NULL)
		MemoryContextDelete(key_cxt);
	key_cxt = NULL;
	key_cache = NULL;
}

/*
 * Read table tid's bucket key from synced_tables, by its id index, with
 * SnapshotSelf (a table synced earlier in this transaction counts); false
 * when no synced table has that number.  No code of a column type runs.
 */
static bool
key_load(int32 tid, uint8 *out)
{
	Relation	heap = table_open(kz_bk_relid("synced_tables"), AccessShareLock);
	Relation	index = index_open(kz_bk_relid("synced_tables_id_key"), AccessShareLock);
	AttrNumber	att = get_attnum(RelationGetRelid(heap), "bucket_key");
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	IndexScanDesc scan;
	ScanKeyData skey[1];
	bool		found;

	if (att == InvalidAttrNumber)
		elog(ERROR, "kizunasync.synced_tables has no column \"bucket_key\"");
	ScanKeyInit(&skey[0], 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(tid));
	scan = index_beginscan(heap, index, SnapshotSelf, 1, 0);
	index_rescan(scan, skey, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	if (found)
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, att, &isnull);
		bytea	   *b = isnull ? NULL : DatumGetByteaPP(d);

		if (b == NULL || VARSIZE_ANY_EXHDR(b) != KZ_SIPHASH_KEY_LEN)
			elog(ERROR, "synced table %d has no valid bucket key", tid);
		memcpy(out, VARDATA_ANY(b), KZ_SIPHASH_KEY_LEN);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	return found;
}

/*
 * The key of table tid's bucket numbers.  A number no synced table has
 * (a table unsynced while a pull that had resolved it runs: unsync_table
 * waits for the table's writers, not for its readers) gets a key of zeros,
 * not cached: its entries are no longer read by any pull.
 */
static const uint8 *
key_of(int32 tid)
{
	KeyEnt	   *e;
	uint8		key[KZ_SIPHASH_KEY_LEN];
	bool		found;

	entry_callbacks_register();
	if (key_cache != NULL &&
		(e = hash_search(key_cache, &tid, HASH_FIND, NULL)) != NULL)
		return e->key;
	/* opening the relations may process invalidations: load, then enter */
	if (!key_load(tid, key))
	{
		static const uint8 none[KZ_SIPHASH_KEY_LEN] = {0};

		return none;
	}
	if (key_cache == NULL || hash_get_num_entries(key_cache) >= KZ_KEY_CACHE)
	{
		HASHCTL		ctl;

		key_cache_reset();
		key_cxt = AllocSetContextCreate(TopMemoryContext, "kizunasync bucket keys",
										ALLOCSET_SMALL_SIZES);
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(KeyEnt);
		ctl.hcxt = key_cxt;
		key_cache = hash_create("kizunasync bucket keys", 16, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		key_rel = kz_bk_relid("synced_tables");
	}
	e = hash_search(key_cache, &tid, HASH_ENTER, &found);
	memcpy(e->key, key, KZ_SIPHASH_KEY_LEN);
	return e->key;
}

int64
kz_entry_bucket_number(int32 tid, const char *label)
{
	uint64		h;

	if (label == NULL)
		return KZ_ENTRY_NULL_BUCKET;
	h = kz_siphash24(key_of(tid), label, strlen(label));
	/* 0 is the NULL value's; the sign bit is kept out for readability */
	h &= PG_INT64_MAX;
	return h == 0 ? 1 : (int64) h;
}

/*
 * Labels this backend knows kizunasync.buckets has, per (tid, number).
 * An entry a transaction added itself is marked with it and dropped when
 * it (or any subtransaction) aborts; at commit it is known for good.  The
 * cache is bounded: past KZ_BUCKET_CACHE entries it starts again.
 */
#define KZ_BUCKET_CACHE		4096

typedef struct BucketKey
{
	int32		tid;
	int64		number;
} BucketKey;

typedef struct BucketEnt
{
	BucketKey	key;
	bool		own;			/* added by the current transaction */
} BucketEnt;

static HTAB *bucket_cache = NULL;
static MemoryContext bucket_cxt = NULL;
static Oid	bucket_rel = InvalidOid;
static int	bucket_own = 0;
static bool bucket_callbacks = false;

static void
bucket_cache_reset(void)
{
	if (bucket_cxt != NULL)
		MemoryContextDelete(bucket_cxt);
	bucket_cxt = NULL;
	bucket_cache = NULL;
	bucket_own = 0;
}

/* Drop the entries the current transaction added (their rows may be gone). */
static void
bucket_cache_drop_own(void)
{
	HASH_SEQ_STATUS st;
	BucketEnt  *e;

	if (bucket_cache == NULL || bucket_own == 0)
		return;
	hash_seq_init(&st, bucket_cache);
	while ((e = hash_seq_search(&st)) != NULL)
		if (e->own)
			hash_search(bucket_cache, &e->key, HASH_REMOVE, NULL);
	bucket_own = 0;
}

static void
bucket_xact_callback(XactEvent event, void *arg)
{
	HASH_SEQ_STATUS st;
	BucketEnt  *e;

	if (bucket_cache == NULL || bucket_own == 0)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			/* committed (or prepared: its outcome is no longer ours to track) */
			hash_seq_init(&st, bucket_cache);
			while ((e = hash_seq_search(&st)) != NULL)
				e->own = false;
			bucket_own = 0;
			if (event == XACT_EVENT_PREPARE)
				bucket_cache_reset();	/* a prepared one may still roll back */
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			bucket_cache_drop_own();
			break;
		default:
			break;
	}
}

static void
bucket_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		bucket_cache_drop_own();
}

static void
bucket_relcache_callback(Datum arg, Oid relid)
{
	if (bucket_cache != NULL && (!OidIsValid(relid) || relid == bucket_rel))
		bucket_cache_reset();
	if (key_cache != NULL && (!OidIsValid(relid) || relid == key_rel))
		key_cache_reset();
}

static void
entry_callbacks_register(void)
{
	if (!bucket_callbacks)
	{
		RegisterXactCallback(bucket_xact_callback, NULL);
		RegisterSubXactCallback(bucket_subxact_callback, NULL);
		CacheRegisterRelcacheCallback(bucket_relcache_callback, (Datum) 0);
		bucket_callbacks = true;
	}
}

static void
bucket_cache_init(void)
{
	HASHCTL		ctl;

	entry_callbacks_register();
	if (bucket_cache != NULL && hash_get_num_entries(bucket_cache) < KZ_BUCKET_CACHE)
		return;
	bucket_cache_reset();
	bucket_cxt = AllocSetContextCreate(TopMemoryContext, "kizunasync bucket labels",
									   ALLOCSET_DEFAULT_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(BucketKey);
	ctl.entrysize = sizeof(BucketEnt);
	ctl.hcxt = bucket_cxt;
	bucket_cache = hash_create("kizunasync bucket labels", 256, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	bucket_rel = kz_bk_relid("buckets");
}

/*
 * Make sure kizunasync.buckets holds (number, tid, label) once this
 * transaction commits; true when the row is this transaction's own (this
 * call added it, or an earlier write of this transaction did: the cache
 * may have been dropped since, by an invalidation or a subtransaction's
 * abort).  A row committed (or added by this transaction) is looked for
 * with SnapshotSelf; another transaction's uncommitted row does not count,
 * since it may roll back: then this one adds its own (the id is not
 * unique), so no writer ever waits here.  A row of the number with another
 * table or label is a collision of the keyed hash: refused.
 */
static bool
bucket_record(int32 tid, int64 number, const char *label)
{
	KzBkTable	t;
	ScanKeyData skey[1];
	HeapTuple	found;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	bool	   *first;
	bool		deferred;
	HeapTuple	tup;
	int			i;

	kz_bk_open(&t, "buckets");
	ScanKeyInit(&skey[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(number));
	found = kz_bk_fetch(&t, kz_bk_index(&t, "buckets_id_idx"), 1, skey);
	if (found != NULL)
	{
		TupleDesc	desc = RelationGetDescr(t.heap);
		bool		isnull;
		int32		ftid = DatumGetInt32(heap_getattr(found, kz_bk_column(&t, "tid") + 1, desc, &isnull));
		text	   *flabel = DatumGetTextPP(heap_getattr(found, kz_bk_column(&t, "label") + 1, desc, &isnull));
		bool		own = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(found->t_data));

		if (ftid != tid || VARSIZE_ANY_EXHDR(flabel) != strlen(label) ||
			memcmp(VARDATA_ANY(flabel), label, strlen(label)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("bucket value of synced table %d has the same number as another value", tid),
					 errdetail("The keyed hash of two bucket values collided (number %lld).",
							   (long long) number),
					 errhint("Report this to the kizunasync maintainers; the change was not recorded.")));
		heap_freetuple(found);
		kz_bk_close(&t);
		return own;
	}
	values[kz_bk_column(&t, "id")] = Int64GetDatum(number);
	values[kz_bk_column(&t, "tid")] = Int32GetDatum(tid);
	values[kz_bk_column(&t, "label")] = CStringGetTextDatum(label);
	first = palloc(sizeof(bool) * Max(t.nindexes, 1));
	for (i = 0; i < t.nindexes; i++)
		first[i] = true;
	tup = kz_bk_insert_first(&t, values, nulls, first, &deferred);
	kz_bk_insert_rest(&t, tup, first, NULL, deferred);
	pfree(first);
	kz_bk_close(&t);
	CommandCounterIncrement();
	return true;
}

int64
kz_entry_bucket(int32 tid, const char *label, bool create)
{
	int64		number = kz_entry_bucket_number(tid, label);
	BucketKey	k;
	BucketEnt  *e;
	bool		found;
	bool		own;

	if (!create || label == NULL)
		return number;
	bucket_cache_init();
	memset(&k, 0, sizeof(k));
	k.tid = tid;
	k.number = number;
	if (hash_search(bucket_cache, &k, HASH_FIND, NULL) != NULL)
		return number;
	own = bucket_record(tid, number, label);
	/* recording may have processed invalidations that reset the cache */
	bucket_cache_init();
	e = hash_search(bucket_cache, &k, HASH_ENTER, &found);
	if (!found)
	{
		e->own = own;
		if (own)
			bucket_own++;
	}
	return number;
}
