/*-------------------------------------------------------------------------
 *
 * stamp.c
 *	  Numbering a change and recording its entry (stamp.h).
 *
 * Invariant S (the section): seq order is the order of the entries'
 * inserts.  Drawing a seq and inserting its entry (the heap tuple and every
 * index entry) happen inside one section that writers enter one at a time:
 * an ExclusiveLock on the lock tag of kizunasync.seq_fence (an object lock,
 * which no SQL statement can take), released right after the inserts,
 * never held to commit.  So when any seq index holds s, every seq below s
 * has all of its entry's tuples in place, and in the WAL every record of
 * the entry of s - 1 precedes every record of the entry of s: a hot standby
 * that replayed s's index entry has replayed all of them.  A pull takes no
 * lock at all (horizon.c).  The argument is in
 * decisions/0010-sequencing.md.
 *
 * The section never waits for another transaction: superseded entries are
 * deleted before it, the sequence is opened before it, and the inserts'
 * unique checks are only noted inside it (UNIQUE_CHECK_PARTIAL) and
 * completed after it.  A statement with many changes enters it once per
 * chunk of at most KZ_STAMP_CHUNK, so other writers wait for at most one
 * chunk.
 *
 * Entries are written with direct heap and index access: no statement is
 * parsed or planned and no name is resolved, so nothing the writer
 * controls (its search_path, its temporary objects) can take part, and no
 * planner choice can make a write cost more than its index probes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "kizunasync.h"
#include "bookkeeping.h"
#include "stamp.h"

/* Changes per entry into the section (a bulk statement yields between chunks). */
#define KZ_STAMP_CHUNK	32

static int64 stamp_wait_after_draw = 0;
static LocalTransactionId stamp_recorded_lxid = InvalidLocalTransactionId;

bool
kz_stamp_xact_recorded(void)
{
	return stamp_recorded_lxid == MyProc->lxid;
}

void
kz_stamp_set_wait_after_draw(int64 key)
{
	stamp_wait_after_draw = key;
}

void
kz_stamp_check_lengths(const char *table_name, const char *pk, const char *bucket_value)
{
	size_t		klen = strlen(pk);
	size_t		blen = bucket_value ? strlen(bucket_value) : 0;

	if (klen > KZ_MAX_KEY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("row key of synced table \"%s\" exceeds the kizunasync maximum of %d bytes",
						table_name, KZ_MAX_KEY_BYTES),
				 errdetail("The key text is %zu bytes.", klen),
				 errhint("Use shorter primary-key values, or stop syncing the table.")));
	if (blen > KZ_MAX_BUCKET_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("bucket value of synced table \"%s\" exceeds the kizunasync maximum of %d bytes",
						table_name, KZ_MAX_BUCKET_BYTES),
				 errdetail("The bucket value text is %zu bytes.", blen),
				 errhint("Bucket values longer than a pull may ask for can never be delivered.")));
}

/* Attribute numbers of the entry tables' columns, looked up by name. */
typedef struct StampColumns
{
	int			seq;
	int			table_name;
	int			pk;
	int			bucket_value;
	int			row_xmin;		/* changelog */
	int			bucket_snapshot;	/* tombstones */
	int			deleted_at;		/* tombstones */
} StampColumns;

static int
stamp_attnum(Relation rel, const char *name)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return i;
	}
	elog(ERROR, "bookkeeping table \"%s\" has no column \"%s\"",
		 RelationGetRelationName(rel), name);
	return -1;					/* keep compiler quiet */
}

static void
stamp_columns(Relation changelog, Relation tombstones, StampColumns *cl, StampColumns *tb)
{
	cl->seq = stamp_attnum(changelog, "seq");
	cl->table_name = stamp_attnum(changelog, "table_name");
	cl->pk = stamp_attnum(changelog, "pk");
	cl->bucket_value = stamp_attnum(changelog, "bucket_value");
	cl->row_xmin = stamp_attnum(changelog, "row_xmin");
	tb->seq = stamp_attnum(tombstones, "seq");
	tb->table_name = stamp_attnum(tombstones, "table_name");
	tb->pk = stamp_attnum(tombstones, "pk");
	tb->bucket_value = stamp_attnum(tombstones, "bucket_value");
	tb->bucket_snapshot = stamp_attnum(tombstones, "bucket_snapshot");
	tb->deleted_at = stamp_attnum(tombstones, "deleted_at");
}

/* One entry of a chunk, built outside the section. */
typedef struct StampEntry
{
	KzBkTable  *t;
	StampColumns *c;
	Datum	   *values;
	bool	   *nulls;
	ItemPointerData tid;
	bool		recheck;		/* a unique check was deferred */
} StampEntry;

/*
 * The end of the chunk that starts at changes[i]: at most KZ_STAMP_CHUNK
 * changes, no two of the same row key, so that every superseded entry of
 * the chunk can be deleted before any of its entries is inserted.
 */
static int
stamp_chunk_end(const KzChange *changes, int i, int n)
{
	int			end;

	for (end = i + 1; end < n && end - i < KZ_STAMP_CHUNK; end++)
	{
		int			k;

		for (k = i; k < end; k++)
			if (strcmp(changes[k].pk, changes[end].pk) == 0 &&
				strcmp(changes[k].table_name, changes[end].table_name) == 0)
				return end;
	}
	return end;
}

/* Delete what the change supersedes and build its entry (outside the section). */
static void
stamp_prepare(const KzChange *ch, KzBkTable *cl, Relation cl_key, StampColumns *clc,
			  KzBkTable *tb, Relation tb_key, StampColumns *tbc, StampEntry *e)
{
	const char *clkey[2];
	const char *tbkey[3];
	int			natts;

	/* earlier changes of this batch must be visible to the lookups */
	CommandCounterIncrement();
	clkey[0] = ch->table_name;
	clkey[1] = ch->pk;
	kz_bk_delete_unique(cl, cl_key, 2, clkey);
	if (ch->op == 'd')
	{
		tbkey[0] = ch->table_name;
		tbkey[1] = ch->pk;
		tbkey[2] = ch->bucket_value;
		kz_bk_delete_unique(tb, tb_key, 3, tbkey);
	}

	e->t = ch->op == 'd' ? tb : cl;
	e->c = ch->op == 'd' ? tbc : clc;
	e->recheck = false;
	natts = RelationGetDescr(e->t->heap)->natts;
	e->values = palloc0(sizeof(Datum) * natts);
	e->nulls = palloc(sizeof(bool) * natts);
	memset(e->nulls, true, sizeof(bool) * natts);
	e->values[e->c->table_name] = CStringGetTextDatum(ch->table_name);
	e->nulls[e->c->table_name] = false;
	e->values[e->c->pk] = CStringGetTextDatum(ch->pk);
	e->nulls[e->c->pk] = false;
	if (ch->bucket_value != NULL)
	{
		e->values[e->c->bucket_value] = CStringGetTextDatum(ch->bucket_value);
		e->nulls[e->c->bucket_value] = false;
	}
	if (ch->op == 'd')
	{
		e->values[e->c->bucket_snapshot] = DirectFunctionCall1(jsonb_in,
															   CStringGetDatum(ch->snapshot));
		e->nulls[e->c->bucket_snapshot] = false;
		e->values[e->c->deleted_at] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
		e->nulls[e->c->deleted_at] = false;
	}
	else if (TransactionIdIsValid(ch->row_xmin))
	{
		e->values[e->c->row_xmin] = TransactionIdGetDatum(ch->row_xmin);
		e->nulls[e->c->row_xmin] = false;
	}
}

int64
kz_stamp_record(const KzChange *changes, int n)
{
	Oid			fence;
	Oid			seqid;
	Relation	seqrel;
	LOCKTAG		section;
	KzBkTable	cl;
	KzBkTable	tb;
	Relation	cl_key;
	Relation	tb_key;
	StampColumns clc;
	StampColumns tbc;
	StampEntry *chunk;
	int64		seq = 0;
	int			i,
				end,
				j;

	if (n <= 0)
		return 0;
	stamp_recorded_lxid = MyProc->lxid;
	fence = kz_bk_relid("seq_fence");
	seqid = kz_bk_relid("change_seq");
	SET_LOCKTAG_OBJECT(section, MyDatabaseId, RelationRelationId, fence, 0);

	/* locked and in the relcache before the section, so nextval() never waits in it */
	seqrel = relation_open(seqid, RowExclusiveLock);
	kz_bk_open(&cl, "changelog");
	kz_bk_open(&tb, "tombstones");
	cl_key = kz_bk_index(&cl, "changelog_table_name_pk_key");
	tb_key = kz_bk_index(&tb, "tombstones_table_name_pk_bucket_value_key");
	stamp_columns(cl.heap, tb.heap, &clc, &tbc);
	chunk = palloc(sizeof(StampEntry) * Min(n, KZ_STAMP_CHUNK));

	for (i = 0; i < n; i = end)
	{
		end = stamp_chunk_end(changes, i, n);
		for (j = i; j < end; j++)
			stamp_prepare(&changes[j], &cl, cl_key, &clc, &tb, tb_key, &tbc, &chunk[j - i]);
		CommandCounterIncrement();

		/* The section: draw + insert, one writer at a time. */
		(void) LockAcquire(&section, ExclusiveLock, false, false);
		for (j = i; j < end; j++)
		{
			StampEntry *e = &chunk[j - i];

			seq = nextval_internal(seqid, false);
			if (stamp_wait_after_draw != 0)
				DirectFunctionCall1(pg_advisory_xact_lock_shared_int8,
									Int64GetDatum(stamp_wait_after_draw));
			e->values[e->c->seq] = Int64GetDatum(seq);
			e->nulls[e->c->seq] = false;
			e->recheck = !kz_bk_insert_nowait(e->t, e->values, e->nulls, &e->tid);
		}
		LockRelease(&section, ExclusiveLock, false);

		for (j = i; j < end; j++)
		{
			StampEntry *e = &chunk[j - i];

			if (e->recheck)
				kz_bk_recheck_unique(e->t, &e->tid);
			pfree(e->values);
			pfree(e->nulls);
		}
	}
	CommandCounterIncrement();

	pfree(chunk);
	kz_bk_close(&tb);
	kz_bk_close(&cl);
	relation_close(seqrel, NoLock);
	return seq;
}
