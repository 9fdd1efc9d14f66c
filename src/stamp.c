/*-------------------------------------------------------------------------
 *
 * stamp.c
 *	  Numbering a change and recording its entry (stamp.h).
 *
 * Invariant S (the section): seq order is the order of the entries'
 * inserts.  Drawing a seq and inserting its entry (the heap tuple, and its
 * entries in the indexes a pull reads: the seq index and the (table,
 * bucket, seq) index) happen inside one section that writers enter one at
 * a time: the exclusive content lock of block 0 of kizunasync.seq_fence (an
 * empty page that holds no row, created by the first writer that finds
 * none), released right after the inserts, never held to commit.  So when
 * a seq index holds s, every seq below s has its heap tuple and those
 * index entries in place, and in the WAL their records precede every
 * record of the entry of s: a hot standby that replayed s's index entry
 * has replayed all of them.  A pull takes no lock at all (horizon.c).  The
 * argument is in decisions/0010-sequencing.md.
 *
 * A buffer content lock is an LWLock: no lock table, and a released lock
 * goes to whichever writer runs first rather than being handed to a
 * sleeping one (a heavyweight lock convoys when 16 writers share 2 cores).
 * In exchange a waiter cannot be cancelled and is not seen by the deadlock
 * detector, so nothing inside the section may wait for another
 * transaction: superseded entries are deleted before it, the sequence is
 * opened and locked before it, and the inserts' unique checks are only
 * noted inside it (UNIQUE_CHECK_PARTIAL) and completed after it, where the
 * entry's other index entries (its row-key index) are written too: the
 * section stays as short as the argument allows.  Inside it a writer takes
 * only buffer locks of the bookkeeping relations (lock order: the section
 * first; no one takes the section holding another buffer lock) and their
 * relation extension locks (held briefly, and only by writers inside the
 * section).  An error releases it (LWLockReleaseAll
 * at (sub)transaction abort).  A statement with many changes enters it once
 * per chunk of at most KZ_STAMP_CHUNK, so other writers wait for at most
 * one chunk, and a cancel or terminate is served between chunks, outside
 * it: a long recording (a big transaction's numbering at commit, which runs
 * at XACT_EVENT_PRE_COMMIT, where an ERROR still aborts the transaction)
 * ends within one chunk of the interrupt.
 *
 * Entries are written with direct heap and index access (entry.c): no
 * statement is parsed or planned and no name is resolved, so nothing the
 * writer controls (its search_path, its temporary objects) can take part,
 * and no planner choice can make a write cost more than its index probes.
 * The one statement is the insert of a bucket label the backend has not
 * seen committed, a privileged statement of fixed text (entry.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "bookkeeping.h"
#include "pgcompat.h"
#include "stamp.h"

/* Changes per entry into the section (a bulk statement yields between chunks). */
#define KZ_STAMP_CHUNK	32

static int64 stamp_wait_after_draw = 0;
static LocalTransactionId stamp_recorded_lxid = InvalidLocalTransactionId;

/*
 * Seqs the current transaction drew, by the subtransaction that drew them,
 * in drawing order (so subids ascend): a subtransaction's abort drops the
 * runs of it and of the subtransactions nested in it (while it is open,
 * every newer one is nested in it), whose entries are dead.
 */
typedef struct StampDrawn
{
	SubTransactionId subid;
	int64		n;
} StampDrawn;

static StampDrawn *stamp_drawn = NULL;	/* in TopMemoryContext */
static int	stamp_ndrawn = 0;
static int	stamp_maxdrawn = 0;
static int64 stamp_held = 0;
static bool stamp_callbacks = false;

bool
kz_stamp_xact_recorded(void)
{
	return stamp_recorded_lxid == kz_my_lxid();
}

int64
kz_stamp_xact_held(void)
{
	return stamp_recorded_lxid == kz_my_lxid() ? stamp_held : 0;
}

static void
stamp_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			stamp_ndrawn = 0;
			stamp_held = 0;
			break;
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			break;
	}
}

static void
stamp_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	while (stamp_ndrawn > 0 && stamp_drawn[stamp_ndrawn - 1].subid >= mySubid)
		stamp_held -= stamp_drawn[--stamp_ndrawn].n;
}

/* n more seqs drawn by the current subtransaction */
static void
stamp_note_drawn(int64 n)
{
	SubTransactionId cur = GetCurrentSubTransactionId();

	if (!stamp_callbacks)
	{
		RegisterXactCallback(stamp_xact_callback, NULL);
		RegisterSubXactCallback(stamp_subxact_callback, NULL);
		stamp_callbacks = true;
	}
	if (stamp_recorded_lxid != kz_my_lxid())
	{
		stamp_ndrawn = 0;
		stamp_held = 0;
	}
	if (stamp_ndrawn == 0 || stamp_drawn[stamp_ndrawn - 1].subid != cur)
	{
		if (stamp_ndrawn == stamp_maxdrawn)
		{
			stamp_maxdrawn = Max(16, stamp_maxdrawn * 2);
			stamp_drawn = stamp_drawn == NULL
				? MemoryContextAlloc(TopMemoryContext, sizeof(StampDrawn) * stamp_maxdrawn)
				: repalloc(stamp_drawn, sizeof(StampDrawn) * stamp_maxdrawn);
		}
		stamp_drawn[stamp_ndrawn].subid = cur;
		stamp_drawn[stamp_ndrawn++].n = 0;
	}
	stamp_drawn[stamp_ndrawn - 1].n += n;
	stamp_held += n;
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

/*
 * The section's page: block 0 of seq_fence, an initialized empty page.  A
 * fresh install, a restore or a VACUUM that truncated the table leaves
 * none; the first writer then adds it (WAL-logged, holding no row).
 *
 * Asking the file's length is a system call per commit (about 1% of a
 * single-row synced commit), so a backend remembers that it saw block 0 in
 * the relation's smgr_targblock, which nothing else sets for seq_fence: it
 * is the insert target of heap_insert, and seq_fence never gets a tuple.
 * Every way block 0 can go resets it before this backend could read the
 * page again: a truncation (VACUUM, or TRUNCATE in the creating
 * transaction) resets it in the truncating backend and sends an smgr
 * invalidation that others process when they next lock seq_fence, which
 * they do before calling this (a truncation holds ACCESS EXCLUSIVE, so it
 * cannot happen while this transaction holds its lock); a new relfilenode
 * gives the relation a new smgr entry.
 */
static Buffer
stamp_section_page(Relation fence)
{
	Buffer		buf;

	if (RelationGetSmgr(fence)->smgr_targblock == 0)
		return ReadBuffer(fence, 0);
	if (RelationGetNumberOfBlocks(fence) == 0)
	{
		LockRelationForExtension(fence, ExclusiveLock);
		if (RelationGetNumberOfBlocks(fence) == 0)
		{
			buf = ReadBufferExtended(fence, MAIN_FORKNUM, P_NEW, RBM_ZERO_AND_LOCK, NULL);
			START_CRIT_SECTION();
			PageInit(BufferGetPage(buf), BufferGetPageSize(buf), 0);
			MarkBufferDirty(buf);
			log_newpage_buffer(buf, true);
			END_CRIT_SECTION();
			UnlockReleaseBuffer(buf);
		}
		UnlockRelationForExtension(fence, ExclusiveLock);
	}
	buf = ReadBuffer(fence, 0);
	RelationGetSmgr(fence)->smgr_targblock = 0;
	return buf;
}

int64
kz_stamp_record(const KzChange *changes, int n)
{
	Oid			seqid;
	Relation	seqrel;
	Relation	fence;
	Buffer		section;
	KzEntryWriter w;
	KzEntryNew *chunk;
	int64		seq = 0;
	int			i,
				end,
				j;

	if (n <= 0)
		return 0;
	stamp_note_drawn(n);
	stamp_recorded_lxid = kz_my_lxid();
	seqid = kz_bk_relid("change_seq");

	/* locked and in the relcache before the section, so nextval() never waits in it */
	seqrel = relation_open(seqid, RowExclusiveLock);
	fence = table_open(kz_bk_relid("seq_fence"), RowExclusiveLock);
	section = stamp_section_page(fence);
	kz_entry_writer_open(&w);
	chunk = palloc(sizeof(KzEntryNew) * Min(n, KZ_STAMP_CHUNK));

	for (i = 0; i < n; i = end)
	{
		/* outside the section, where interrupts are held */
		CHECK_FOR_INTERRUPTS();
		end = stamp_chunk_end(changes, i, n);
		for (j = i; j < end; j++)
			kz_entry_prepare(&w, &changes[j], &chunk[j - i]);
		CommandCounterIncrement();

		/* The section: draw + insert, one writer at a time. */
		LockBuffer(section, BUFFER_LOCK_EXCLUSIVE);
		for (j = i; j < end; j++)
		{
			seq = nextval_internal(seqid, false);
			if (stamp_wait_after_draw != 0)
				DirectFunctionCall1(pg_advisory_xact_lock_shared_int8,
									Int64GetDatum(stamp_wait_after_draw));
			kz_entry_insert_first(&w, &chunk[j - i], seq);
		}
		LockBuffer(section, BUFFER_LOCK_UNLOCK);

		for (j = i; j < end; j++)
			kz_entry_insert_rest(&w, &chunk[j - i]);
	}
	CommandCounterIncrement();

	pfree(chunk);
	ReleaseBuffer(section);
	kz_entry_writer_close(&w);
	table_close(fence, NoLock);
	relation_close(seqrel, NoLock);
	return seq;
}

/*
 * nextval() refuses to draw in a read-only transaction, and so does
 * kz_stamp_record: an operator function that records rows it did not write
 * (seeding, repair) stays refused there.  Changes the capture trigger
 * captured are another matter.  It fires only for writes of synced tables,
 * which are never temporary, and the executor refuses those in a read-only
 * transaction, so every captured change was written before the
 * transaction switched to READ ONLY (SET TRANSACTION READ ONLY, which
 * PostgreSQL allows after writes; the commit then keeps what was written).
 * Their entries are part of those writes, numbered at commit, at an entry
 * point or past the write-time budget, so the read-only flag is cleared for
 * their recording alone, which runs no code but PostgreSQL's and this
 * file's, and restored after it, also on error.  Such a transaction has an
 * xid; one without keeps the refusal (a hot standby assigns none and
 * captures nothing).
 */
int64
kz_stamp_record_captured(const KzChange *changes, int n)
{
	volatile int64 seq = 0;

	if (!XactReadOnly || !TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return kz_stamp_record(changes, n);
	XactReadOnly = false;
	PG_TRY();
	{
		seq = kz_stamp_record(changes, n);
	}
	PG_FINALLY();
	{
		XactReadOnly = true;
	}
	PG_END_TRY();
	return seq;
}
