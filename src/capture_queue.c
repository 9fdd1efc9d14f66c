/*-------------------------------------------------------------------------
 *
 * capture_queue.c
 *	  The push queue (capture_queue.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"

#include "capture_queue.h"
#include "stamp.h"

typedef struct KzQueued
{
	KzChange	change;
	SubTransactionId subid;
} KzQueued;

static bool queue_on = false;
static SubTransactionId queue_on_subid = InvalidSubTransactionId;
static List *queue = NIL;		/* of KzQueued *, in TopTransactionContext */
static bool callbacks_registered = false;

static void
queue_reset(void)
{
	queue_on = false;
	queue_on_subid = InvalidSubTransactionId;
	queue = NIL;				/* memory goes with TopTransactionContext */
}

static void
queue_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (queue != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg("%d captured changes were neither flushed nor discarded",
								list_length(queue))));
			queue_reset();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			queue_reset();
			break;
	}
}

static void
queue_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	if (queue != NIL)
	{
		/* drop what the aborted subtransaction (and its children) captured */
		List	   *keep = NIL;
		ListCell   *lc;
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		foreach(lc, queue)
		{
			KzQueued   *q = lfirst(lc);

			if (q->subid < mySubid)
				keep = lappend(keep, q);
		}
		queue = keep;
		MemoryContextSwitchTo(old);
	}

	/*
	 * Queuing turned on inside the aborted subtransaction (a push that failed
	 * inside a caller's savepoint) ends with it.
	 */
	if (queue_on && queue_on_subid >= mySubid)
	{
		queue_on = false;
		queue_on_subid = InvalidSubTransactionId;
		queue = NIL;
	}
}

static void
queue_register(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(queue_xact_callback, NULL);
	RegisterSubXactCallback(queue_subxact_callback, NULL);
	callbacks_registered = true;
}

static char *
queue_strdup(const char *s)
{
	return s ? MemoryContextStrdup(TopTransactionContext, s) : NULL;
}

void
kz_capture_emit(const KzChange *changes, int n)
{
	MemoryContext old;
	int			i;

	if (!queue_on)
	{
		kz_stamp_record_captured(changes, n);
		return;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	for (i = 0; i < n; i++)
	{
		KzQueued   *q = palloc(sizeof(KzQueued));

		q->change = changes[i];
		q->change.table_name = queue_strdup(changes[i].table_name);
		q->change.pk = queue_strdup(changes[i].pk);
		q->change.bucket_value = queue_strdup(changes[i].bucket_value);
		q->change.snapshot = queue_strdup(changes[i].snapshot);
		q->subid = GetCurrentSubTransactionId();
		queue = lappend(queue, q);
	}
	MemoryContextSwitchTo(old);
}

void
kz_capture_queue_begin(void)
{
	queue_register();
	if (!queue_on)
		queue_on_subid = GetCurrentSubTransactionId();
	queue_on = true;
}

void
kz_capture_queue_flush(void)
{
	int			n = list_length(queue);
	KzChange   *arr;
	ListCell   *lc;
	int			i = 0;

	if (n == 0)
		return;
	arr = palloc(sizeof(KzChange) * n);
	foreach(lc, queue)
		arr[i++] = ((KzQueued *) lfirst(lc))->change;
	queue = NIL;
	kz_stamp_record_captured(arr, n);
	pfree(arr);
}

void
kz_capture_queue_discard(void)
{
	queue = NIL;
}

void
kz_capture_queue_end(void)
{
	if (queue != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("%d captured changes were neither flushed nor discarded",
						list_length(queue))));
	queue_on = false;
	queue_on_subid = InvalidSubTransactionId;
}

bool
kz_capture_queue_active(void)
{
	return queue_on;
}

int
kz_capture_queue_length(void)
{
	return list_length(queue);
}

char
kz_capture_queued_op(const char *table_name, const char *pk)
{
	char		op = '\0';
	ListCell   *lc;

	foreach(lc, queue)
	{
		KzQueued   *q = lfirst(lc);

		if (strcmp(q->change.table_name, table_name) == 0 &&
			strcmp(q->change.pk, pk) == 0)
			op = q->change.op;
	}
	return op;
}
