/*-------------------------------------------------------------------------
 *
 * capture_batch.c
 *	  Statement-level batching of captured changes (capture_batch.h).
 *
 * A statement's AFTER ROW trigger events fire inside its ExecutorFinish
 * (COPY: inside its ProcessUtility).  The hooks below count the hooked
 * statements running (batch_level); each pending change remembers the
 * level it was captured at, and when a hooked statement ends, the pending
 * list is recorded if it holds a change captured inside that statement.
 * A nested statement that captured nothing (a foreign key check, an
 * application trigger's write to an unsynced table) leaves the list alone,
 * so an UPDATE of a million rows is recorded in chunks of
 * kizunasync.capture_batch changes however many triggers fire per row.
 *
 * A change captured by a statement that began before this library was
 * loaded (the first synced write of a session loads it from its trigger)
 * is an orphan: no hooked statement will end around it, so it is recorded
 * at that statement's ExecutorEnd, or (a COPY's) when the next statement
 * starts, an entry point runs or the transaction commits, whichever comes
 * first.
 *
 * The push queue (capture_queue.h) is not batched here: while it is on,
 * changes go to it directly, and it is only turned on with nothing pending.
 * Logical replication's apply worker records each row's changes at once,
 * as it runs no hooked statements.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "replication/worker_internal.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "capture_batch.h"
#include "capture_queue.h"
#include "capture_spill.h"
#include "cursor_core.h"

typedef struct BatchItem
{
	KzChange	change;
	SubTransactionId subid;		/* subtransaction that captured it */
} BatchItem;

typedef struct BatchList
{
	MemoryContext cxt;			/* the items and their strings */
	BatchItem  *items;
	int			n;
	int			max;
} BatchList;

/* changes per kz_stamp_record call while flushing */
#define FLUSH_SLICE 64

static int	batch_size = 1000;
static int	write_time_changes = -1;
static int	prepared_changes = -1;
static int	batch_level = 0;
static bool batch_flushing = false;
static bool batch_callbacks = false;

static BatchList pending;		/* captured, not yet recorded, in capture order */
static int	pending_max_level = 0;
static bool pending_orphans = false;	/* level-0 changes, or unrecorded again */
static MemoryContext flush_cxt = NULL;

/* numbering at commit (decisions/0010, "Numbering at commit") */
static int	xact_write_time = 0;	/* changes this transaction numbered early */
static bool xact_deferring = false; /* the rest waits for the commit */
static MemoryContext drain_cxt = NULL;

static ExecutorStart_hook_type prev_start = NULL;
static ExecutorFinish_hook_type prev_finish = NULL;
static ExecutorEnd_hook_type prev_end = NULL;
static ProcessUtility_hook_type prev_utility = NULL;

/* ---------------------------------------------------------------- lists */

static void
batch_list_reset(BatchList *l)
{
	if (l->cxt != NULL)
		MemoryContextReset(l->cxt);
	l->items = NULL;
	l->n = 0;
	l->max = 0;
}

static char *
batch_strdup(BatchList *l, const char *s)
{
	return s ? MemoryContextStrdup(l->cxt, s) : NULL;
}

/* Append a copy of item (its strings copied into l's context). */
static BatchItem *
batch_list_add(BatchList *l, const BatchItem *item)
{
	BatchItem  *it;

	if (l->cxt == NULL)
		l->cxt = AllocSetContextCreate(TopMemoryContext, "kizunasync capture batch",
									   ALLOCSET_DEFAULT_SIZES);
	if (l->n == l->max)
	{
		int			newmax = Max(64, l->max * 2);

		l->items = l->items == NULL
			? MemoryContextAlloc(l->cxt, sizeof(BatchItem) * newmax)
			: repalloc(l->items, sizeof(BatchItem) * newmax);
		l->max = newmax;
	}
	it = &l->items[l->n++];
	*it = *item;
	/* consecutive changes mostly share the table name: copy it once */
	if (l->n > 1 && strcmp(l->items[l->n - 2].change.table_name, item->change.table_name) == 0)
		it->change.table_name = l->items[l->n - 2].change.table_name;
	else
		it->change.table_name = batch_strdup(l, item->change.table_name);
	it->change.pk = batch_strdup(l, item->change.pk);
	it->change.bucket_value = batch_strdup(l, item->change.bucket_value);
	it->change.snapshot = batch_strdup(l, item->change.snapshot);
	return it;
}

/* ---------------------------------------------------------------- flushing */

static void
batch_reset_all(void)
{
	batch_list_reset(&pending);
	pending_max_level = 0;
	pending_orphans = false;
	xact_write_time = 0;
	xact_deferring = false;
	kz_spill_forget();
}

/*
 * Record items[0 .. n-1] now, in order.  On error nothing is changed here:
 * the (sub)transaction that ran the recording aborts, which drops what it
 * captured and rolls back what was recorded; changes captured further out
 * stay pending (or stored).
 */
static void
batch_emit(const BatchItem *items, int n)
{
	MemoryContext old = CurrentMemoryContext;
	KzChange   *arr;
	int			i;

	if (n <= 0)
		return;
	arr = palloc(sizeof(KzChange) * n);
	for (i = 0; i < n; i++)
		arr[i] = items[i].change;
	if (n <= FLUSH_SLICE / 4)
	{
		kz_capture_emit(arr, n);	/* a few rows: in the caller's memory */
		pfree(arr);
		return;
	}

	/*
	 * In slices, each in a context whose keeper block it fits in:
	 * kz_stamp_record frees nothing per change, and memory returned to
	 * malloc between slices comes back as page faults.
	 */
	if (flush_cxt == NULL)
		flush_cxt = AllocSetContextCreate(TopMemoryContext,
										  "kizunasync capture flush",
										  0, 256 * 1024, 256 * 1024);
	PG_TRY();
	{
		for (i = 0; i < n; i += FLUSH_SLICE)
		{
			MemoryContextReset(flush_cxt);
			MemoryContextSwitchTo(flush_cxt);
			kz_capture_emit(arr + i, Min(FLUSH_SLICE, n - i));
			MemoryContextSwitchTo(old);
		}
	}
	PG_FINALLY();
	{
		MemoryContextSwitchTo(old);
		MemoryContextReset(flush_cxt);
	}
	PG_END_TRY();
	pfree(arr);
}

/*
 * Record what the store holds past its recorded changes, in slices.  In a
 * subtransaction the store keeps them, marked recorded: if it aborts, they
 * are unrecorded again (capture_spill.h).
 */
static void
batch_drain_spill(void)
{
	BatchItem	slice[FLUSH_SLICE];
	int			n;
	volatile bool more = true;

	if (drain_cxt == NULL)
		drain_cxt = AllocSetContextCreate(TopMemoryContext, "kizunasync capture drain",
										  ALLOCSET_DEFAULT_SIZES);
	batch_flushing = true;
	PG_TRY();
	{
		kz_spill_rewind();
		while (more)
		{
			MemoryContextReset(drain_cxt);
			for (n = 0; n < FLUSH_SLICE; n++)
			{
				if (!kz_spill_next(&slice[n].change, &slice[n].subid, drain_cxt))
				{
					more = false;
					break;
				}
			}
			batch_emit(slice, n);
		}
	}
	PG_FINALLY();
	{
		batch_flushing = false;
		MemoryContextReset(drain_cxt);
	}
	PG_END_TRY();
	kz_spill_recorded(GetCurrentSubTransactionId());
}

/* Drop the first n pending changes. */
static void
batch_pending_consumed(int n)
{
	if (n == pending.n)
	{
		batch_list_reset(&pending);
		pending_max_level = 0;
		pending_orphans = false;
	}
	else
	{
		memmove(pending.items, pending.items + n, sizeof(BatchItem) * (pending.n - n));
		pending.n -= n;
	}
}

/*
 * Record the first n pending changes now; the rest stay pending.  Entries
 * recorded in a subtransaction below the one that captured their change
 * would vanish with it while the change stays: such changes are recorded
 * through the store, which keeps them until that subtransaction commits
 * (and reads them again if it aborts), on disk beyond work_mem.
 */
static void
batch_record_pending(int n)
{
	SubTransactionId cur = GetCurrentSubTransactionId();
	int			i;

	for (i = 0; i < n && pending.items[i].subid >= cur; i++)
		;
	if (i < n)
	{
		for (i = 0; i < n; i++)
			kz_spill_append(&pending.items[i].change, pending.items[i].subid);
		batch_pending_consumed(n);
		batch_drain_spill();
		return;
	}
	batch_flushing = true;
	PG_TRY();
	{
		batch_emit(pending.items, n);
	}
	PG_FINALLY();
	{
		batch_flushing = false;
	}
	PG_END_TRY();
	batch_pending_consumed(n);
}

void
kz_capture_batch_flush(void)
{
	if (batch_flushing)
		return;
	if (kz_spill_unrecorded() > 0)
		batch_drain_spill();
	if (pending.n > 0)
		batch_record_pending(pending.n);
}

/*
 * How many changes a transaction numbers while it runs; the rest it
 * numbers at commit.  Every open transaction then holds at most this many
 * seqs in flight, every prepared one at most batch_prepared_budget(), and
 * all of them together at most KZ_CURSOR_MAX_HOLES: no cursor ever needs
 * more holes for transactions that are not committing (decisions/0010,
 * "Numbering at commit" and "Prepared transactions").
 */
static int
batch_write_time_budget(void)
{
	if (write_time_changes >= 0)
		return write_time_changes;
	if (prepared_changes >= 0)
		return Max(0, (KZ_CURSOR_MAX_HOLES - max_prepared_xacts * prepared_changes) / MaxBackends);
	return KZ_CURSOR_MAX_HOLES / (MaxBackends + max_prepared_xacts);
}

/* The write-time budget, for kizunasync.health() (issue 31). */
int
kz_capture_batch_write_time_budget(void)
{
	return batch_write_time_budget();
}

/* How many seqs a prepared transaction may hold (the same share by default). */
static int
batch_prepared_budget(void)
{
	if (prepared_changes >= 0)
		return prepared_changes;
	return KZ_CURSOR_MAX_HOLES / (MaxBackends + max_prepared_xacts);
}

/*
 * A prepared transaction holds every seq it drew until COMMIT PREPARED or
 * ROLLBACK PREPARED, which no hook of this library sees: refuse to prepare
 * one that would hold more than its budget.  held: the seqs it would hold.
 */
static void
batch_check_prepare(int64 held)
{
	int			budget = batch_prepared_budget();

	if (held <= budget || max_prepared_xacts == 0 || MyLogicalRepWorker != NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot prepare a transaction with more than %d changes of synced tables",
					budget),
			 errdetail("The transaction has at least " INT64_FORMAT " changes. A prepared transaction "
					   "keeps their seqs in flight until COMMIT PREPARED or ROLLBACK PREPARED, "
					   "and a pull cannot pass more than %d seqs in flight.",
					   held, KZ_CURSOR_MAX_HOLES),
			 errhint("Commit it without PREPARE TRANSACTION, or split it. A superuser may raise "
					 "kizunasync.prepared_changes, which lowers every transaction's "
					 "kizunasync.write_time_changes.")));
}

/*
 * Record what the budget allows now (a statement ended, the list is full,
 * or changes are recorded row by row); keep the rest for the commit, in
 * the store once the list is full.
 */
static void
batch_flush_budgeted(void)
{
	int64		stored = kz_spill_unrecorded();
	int64		allow;
	int			i;

	if (batch_flushing || (pending.n == 0 && stored == 0))
		return;
	allow = xact_deferring ? 0 : Max(0, batch_write_time_budget() - xact_write_time);
	if (allow >= stored + pending.n)
	{
		xact_write_time += (int) (stored + pending.n);
		kz_capture_batch_flush();
		pending_orphans = false;
		return;
	}
	xact_deferring = true;
	/* nothing is recorded ahead of a stored change (a subtransaction's abort can leave some) */
	if (allow > 0 && stored == 0)
	{
		xact_write_time += allow;
		batch_record_pending(allow);
	}
	if (pending.n < batch_size)
		return;
	for (i = 0; i < pending.n; i++)
		kz_spill_append(&pending.items[i].change, pending.items[i].subid);
	batch_list_reset(&pending);
	pending_max_level = 0;
	pending_orphans = false;
}

void
kz_capture_batch_flush_early(void)
{
	batch_flush_budgeted();
}

/* A hooked statement ended: record what was captured inside it. */
static void
batch_statement_ended(void)
{
	if (pending_orphans || (pending.n > 0 && pending_max_level > batch_level))
		batch_flush_budgeted();
}

/* ---------------------------------------------------------------- callbacks */

static void
batch_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			kz_capture_batch_flush();
			break;
		case XACT_EVENT_PRE_PREPARE:
			/* what it holds and has pending: a bound before numbering it */
			batch_check_prepare(kz_stamp_xact_held() + pending.n);
			kz_capture_batch_flush();
			/* exactly, once the changes stored were read */
			batch_check_prepare(kz_stamp_xact_held());
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			batch_reset_all();
			break;
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			break;
	}
}

static void
batch_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			i,
				k;

	if (event == SUBXACT_EVENT_COMMIT_SUB)
		kz_spill_commit_sub(mySubid, parentSubid);
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		/*
		 * What mySubid captured is gone with it; changes captured before it
		 * whose entries it rolled back are unrecorded again in the store,
		 * ahead of anything pending (they were captured first).
		 */
		kz_spill_abort_sub(mySubid);
		for (i = k = 0; i < pending.n; i++)
			if (pending.items[i].subid < mySubid)
				pending.items[k++] = pending.items[i];
		pending.n = k;
		if (pending.n == 0)
			batch_list_reset(&pending);
		pending_orphans = pending.n > 0 || kz_spill_unrecorded() > 0;
		pending_max_level = 0;
	}
}

/* ---------------------------------------------------------------- hooks */

static void
batch_executor_start(QueryDesc *queryDesc, int eflags)
{
	/* left over by a COPY that began before the library was loaded */
	if (pending_orphans)
		batch_flush_budgeted();
	if (prev_start)
		prev_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

static void
batch_executor_finish(QueryDesc *queryDesc)
{
	batch_level++;
	PG_TRY();
	{
		if (prev_finish)
			prev_finish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		batch_level--;
	}
	PG_END_TRY();
	batch_statement_ended();
}

static void
batch_executor_end(QueryDesc *queryDesc)
{
	/* a statement that began before the library was loaded */
	if (pending_orphans)
		batch_flush_budgeted();
	if (prev_end)
		prev_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

static void
batch_process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					  ProcessUtilityContext context, ParamListInfo params,
					  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (pending_orphans)
		batch_flush_budgeted();
	batch_level++;
	PG_TRY();
	{
		if (prev_utility)
			prev_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
						 dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
									queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		batch_level--;
	}
	PG_END_TRY();
	batch_statement_ended();
}

/* ---------------------------------------------------------------- capture */

void
kz_capture_batch_add(const KzChange *changes, int n)
{
	int			i;

	if (kz_capture_queue_active() || MyLogicalRepWorker != NULL)
	{
		kz_capture_batch_flush();
		kz_capture_emit(changes, n);
		return;
	}
	if (!batch_callbacks)
	{
		RegisterXactCallback(batch_xact_callback, NULL);
		RegisterSubXactCallback(batch_subxact_callback, NULL);
		batch_callbacks = true;
	}
	for (i = 0; i < n; i++)
	{
		BatchItem	item;

		item.change = changes[i];
		item.subid = GetCurrentSubTransactionId();
		batch_list_add(&pending, &item);
	}
	if (batch_level == 0)
		pending_orphans = true;
	pending_max_level = Max(pending_max_level, batch_level);
	if (pending.n >= batch_size)
		batch_flush_budgeted();
}

void
kz_capture_batch_init(void)
{
	DefineCustomIntVariable("kizunasync.capture_batch",
							"Changes a statement's capture records at once.",
							"A multi-row statement's changes are numbered and recorded in "
							"chunks of this many, at the end of the statement; 1 records "
							"each row's changes from its trigger.",
							&batch_size,
							1000, 1, 100000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("kizunasync.write_time_changes",
							"Changes a transaction numbers while it runs; the rest are numbered at commit.",
							"-1 (the default) gives each transaction the cursor's hole limit divided by "
							"max_connections and the other backends and prepared transactions (or, when "
							"kizunasync.prepared_changes is set, what it leaves of the limit divided by "
							"the backends), so that open and prepared transactions together never hold "
							"more seqs in flight than a cursor can list as holes.",
							&write_time_changes,
							-1, -1, INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("kizunasync.prepared_changes",
							"Changes a transaction may hold when it is prepared (PREPARE TRANSACTION).",
							"-1 (the default) gives a prepared transaction the same share of the cursor's "
							"hole limit as kizunasync.write_time_changes gives a running one. A value "
							"set here is reserved for every possible prepared transaction, and the "
							"default write-time share of running transactions shrinks to what is left.",
							&prepared_changes,
							-1, -1, KZ_CURSOR_MAX_HOLES,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	prev_start = ExecutorStart_hook;
	ExecutorStart_hook = batch_executor_start;
	prev_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = batch_executor_finish;
	prev_end = ExecutorEnd_hook;
	ExecutorEnd_hook = batch_executor_end;
	prev_utility = ProcessUtility_hook;
	ProcessUtility_hook = batch_process_utility;
}
