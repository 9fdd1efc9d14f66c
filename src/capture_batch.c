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

#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "replication/worker_internal.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "capture_batch.h"
#include "capture_queue.h"

typedef struct BatchItem
{
	KzChange	change;
	SubTransactionId subid;		/* subtransaction that captured it */
	SubTransactionId rec_subid; /* set aside: subtransaction that recorded it */
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
static int	batch_level = 0;
static bool batch_flushing = false;
static bool batch_callbacks = false;

static BatchList pending;		/* captured, not yet recorded, in capture order */
static BatchList aside;			/* recorded in a subtransaction below the capturing one */
static int	pending_max_level = 0;
static bool pending_orphans = false;	/* holds level-0 or re-pended changes */
static MemoryContext flush_cxt = NULL;

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
	batch_list_reset(&aside);
	pending_max_level = 0;
	pending_orphans = false;
}

void
kz_capture_batch_flush(void)
{
	SubTransactionId cur;
	MemoryContext old;
	KzChange   *arr;
	int			n = pending.n;
	int			i;

	if (n == 0 || batch_flushing)
		return;
	arr = MemoryContextAlloc(pending.cxt, sizeof(KzChange) * n);
	for (i = 0; i < n; i++)
		arr[i] = pending.items[i].change;
	old = CurrentMemoryContext;

	/*
	 * On error the pending list stays as it is: the (sub)transaction that
	 * ran the flush aborts, which drops what it captured and rolls back what
	 * the flush recorded; changes captured further out stay pending.
	 */
	batch_flushing = true;
	PG_TRY();
	{
		if (n <= FLUSH_SLICE / 4)
			kz_capture_emit(arr, n);	/* a few rows: in the caller's memory */
		else
		{
			/*
			 * In slices, each in a context whose keeper block it fits in:
			 * kz_stamp_record frees nothing per change, and memory returned
			 * to malloc between slices comes back as page faults.
			 */
			if (flush_cxt == NULL)
				flush_cxt = AllocSetContextCreate(TopMemoryContext,
												  "kizunasync capture flush",
												  0, 256 * 1024, 256 * 1024);
			for (i = 0; i < n; i += FLUSH_SLICE)
			{
				MemoryContextReset(flush_cxt);
				MemoryContextSwitchTo(flush_cxt);
				kz_capture_emit(arr + i, Min(FLUSH_SLICE, n - i));
				MemoryContextSwitchTo(old);
			}
		}
	}
	PG_FINALLY();
	{
		batch_flushing = false;
		MemoryContextSwitchTo(old);
	}
	PG_END_TRY();

	/*
	 * Entries recorded in a subtransaction below the one that captured their
	 * change would vanish with it: keep those changes aside until it commits.
	 */
	cur = GetCurrentSubTransactionId();
	for (i = 0; i < n; i++)
		if (pending.items[i].subid < cur)
			batch_list_add(&aside, &pending.items[i])->rec_subid = cur;
	batch_list_reset(&pending);
	pending_max_level = 0;
	pending_orphans = false;
	if (flush_cxt != NULL)
		MemoryContextReset(flush_cxt);
}

/* A hooked statement ended: record what was captured inside it. */
static void
batch_statement_ended(void)
{
	if (pending.n > 0 && (pending_orphans || pending_max_level > batch_level))
		kz_capture_batch_flush();
}

/* ---------------------------------------------------------------- callbacks */

static void
batch_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			kz_capture_batch_flush();
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
	{
		/* entries recorded in mySubid now belong to its parent */
		for (i = k = 0; i < aside.n; i++)
		{
			BatchItem  *it = &aside.items[i];

			if (it->rec_subid >= mySubid)
				it->rec_subid = parentSubid;
			if (it->rec_subid > it->subid)
				aside.items[k++] = *it;
		}
		aside.n = k;
		if (aside.n == 0)
			batch_list_reset(&aside);
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB && (pending.n > 0 || aside.n > 0))
	{
		BatchList	keep = {0};

		/*
		 * Changes captured before mySubid whose entries it rolled back are
		 * pending again, first (they were captured before anything still
		 * pending); what mySubid itself captured is gone with it.
		 */
		for (i = 0; i < aside.n; i++)
			if (aside.items[i].rec_subid >= mySubid && aside.items[i].subid < mySubid)
				batch_list_add(&keep, &aside.items[i]);
		for (i = 0; i < pending.n; i++)
			if (pending.items[i].subid < mySubid)
				batch_list_add(&keep, &pending.items[i]);
		for (i = k = 0; i < aside.n; i++)
			if (aside.items[i].rec_subid < mySubid)
				aside.items[k++] = aside.items[i];
		aside.n = k;
		if (aside.n == 0)
			batch_list_reset(&aside);

		batch_list_reset(&pending);
		for (i = 0; i < keep.n; i++)
			batch_list_add(&pending, &keep.items[i]);
		if (keep.cxt != NULL)
			MemoryContextDelete(keep.cxt);
		pending_orphans = pending.n > 0;
		pending_max_level = 0;
	}
}

/* ---------------------------------------------------------------- hooks */

static void
batch_executor_start(QueryDesc *queryDesc, int eflags)
{
	/* left over by a COPY that began before the library was loaded */
	if (pending_orphans)
		kz_capture_batch_flush();
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
		kz_capture_batch_flush();
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
		kz_capture_batch_flush();
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

	if (batch_size <= 1 || kz_capture_queue_active() || MyLogicalRepWorker != NULL)
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
		item.rec_subid = InvalidSubTransactionId;
		batch_list_add(&pending, &item);
	}
	if (batch_level == 0)
		pending_orphans = true;
	pending_max_level = Max(pending_max_level, batch_level);
	if (pending.n >= batch_size)
		kz_capture_batch_flush();
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
	prev_start = ExecutorStart_hook;
	ExecutorStart_hook = batch_executor_start;
	prev_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = batch_executor_finish;
	prev_end = ExecutorEnd_hook;
	ExecutorEnd_hook = batch_executor_end;
	prev_utility = ProcessUtility_hook;
	ProcessUtility_hook = batch_process_utility;
}
