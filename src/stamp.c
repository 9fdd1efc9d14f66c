/*-------------------------------------------------------------------------
 *
 * stamp.c
 *	  Numbering a change and recording its entry (stamp.h).
 *
 * Invariant F (the fence): every seq s <= L, where L is the sequence's
 * high-water read under the fence, already has its entry tuple in the heap
 * and in the seq index of changelog or tombstones (committed, in flight or
 * aborted).  A writer holds RowExclusiveLock on kizunasync.seq_fence from
 * just before nextval() until its entry's heap and index inserts have
 * returned; a pull takes ShareLock on it for the instant it reads L (see
 * horizon.c).  ShareLock conflicts with RowExclusiveLock, so when the pull
 * holds it no writer is between "drew a seq" and "inserted its entry";
 * writers do not conflict with each other, and the lock is released right
 * after the insert, never held to commit.  The argument is in
 * decisions/0010-sequencing.md.
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
#include "access/xact.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "bookkeeping.h"
#include "stamp.h"

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

int64
kz_stamp_record(const KzChange *changes, int n)
{
	Oid			fence;
	Oid			seqid;
	KzBkTable	cl;
	KzBkTable	tb;
	Relation	cl_key;
	Relation	tb_key;
	StampColumns clc;
	StampColumns tbc;
	int64		seq = 0;
	int			i;

	if (n <= 0)
		return 0;
	stamp_recorded_lxid = MyProc->lxid;
	fence = kz_bk_relid("seq_fence");
	seqid = kz_bk_relid("change_seq");
	kz_bk_open(&cl, "changelog");
	kz_bk_open(&tb, "tombstones");
	cl_key = kz_bk_index(&cl, "changelog_table_name_pk_key");
	tb_key = kz_bk_index(&tb, "tombstones_table_name_pk_bucket_value_key");
	stamp_columns(cl.heap, tb.heap, &clc, &tbc);

	for (i = 0; i < n; i++)
	{
		const KzChange *ch = &changes[i];
		const char *clkey[2];
		const char *tbkey[3];
		KzBkTable  *t;
		StampColumns *c;
		Datum	   *values;
		bool	   *nulls;
		int			natts;

		/* earlier changes of this batch must be visible to the lookups */
		CommandCounterIncrement();

		/*
		 * Outside the fence: remove what this entry supersedes, so that the
		 * insert's unique check below meets no live tuple of another
		 * transaction and never waits while inside the fence.
		 */
		clkey[0] = ch->table_name;
		clkey[1] = ch->pk;
		kz_bk_delete_unique(&cl, cl_key, 2, clkey);
		if (ch->op == 'd')
		{
			tbkey[0] = ch->table_name;
			tbkey[1] = ch->pk;
			tbkey[2] = ch->bucket_value;
			kz_bk_delete_unique(&tb, tb_key, 3, tbkey);
		}
		CommandCounterIncrement();

		t = ch->op == 'd' ? &tb : &cl;
		c = ch->op == 'd' ? &tbc : &clc;
		natts = RelationGetDescr(t->heap)->natts;
		values = palloc0(sizeof(Datum) * natts);
		nulls = palloc(sizeof(bool) * natts);
		memset(nulls, true, sizeof(bool) * natts);
		values[c->table_name] = CStringGetTextDatum(ch->table_name);
		nulls[c->table_name] = false;
		values[c->pk] = CStringGetTextDatum(ch->pk);
		nulls[c->pk] = false;
		if (ch->bucket_value != NULL)
		{
			values[c->bucket_value] = CStringGetTextDatum(ch->bucket_value);
			nulls[c->bucket_value] = false;
		}
		if (ch->op == 'd')
		{
			values[c->bucket_snapshot] = DirectFunctionCall1(jsonb_in,
															 CStringGetDatum(ch->snapshot));
			nulls[c->bucket_snapshot] = false;
			values[c->deleted_at] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
			nulls[c->deleted_at] = false;
		}
		else if (TransactionIdIsValid(ch->row_xmin))
		{
			values[c->row_xmin] = TransactionIdGetDatum(ch->row_xmin);
			nulls[c->row_xmin] = false;
		}

		/* The fence: draw + insert, with no pull reading L in between. */
		LockRelationOid(fence, RowExclusiveLock);
		seq = nextval_internal(seqid, false);
		if (stamp_wait_after_draw != 0)
			DirectFunctionCall1(pg_advisory_xact_lock_shared_int8,
								Int64GetDatum(stamp_wait_after_draw));
		values[c->seq] = Int64GetDatum(seq);
		nulls[c->seq] = false;
		kz_bk_insert(t, values, nulls);
		UnlockRelationOid(fence, RowExclusiveLock);

		pfree(values);
		pfree(nulls);
	}
	CommandCounterIncrement();

	kz_bk_close(&tb);
	kz_bk_close(&cl);
	return seq;
}
