/*-------------------------------------------------------------------------
 *
 * capture_batch.h
 *	  Statement-level batching of captured changes.
 *
 *	  The capture trigger does not record each row's changes by itself: it
 *	  appends them, in capture order, to one pending list, which is recorded
 *	  (kz_capture_emit, one call for many changes) when the statement whose
 *	  trigger events captured them ends, when the list reaches
 *	  kizunasync.capture_batch changes, before any entry point of the
 *	  extension runs, and before the transaction commits or prepares.
 *	  Changes are therefore numbered in the order they were captured, by the
 *	  statement that wrote them, as before; only the moment of numbering moves
 *	  from each row's trigger call to the end of its statement.
 *
 *	  Subtransactions: pending changes of an aborted subtransaction are
 *	  dropped; changes recorded inside a subtransaction deeper than the one
 *	  that captured them (an application trigger with an exception block
 *	  wrote a synced row while earlier rows were pending, or an entry point
 *	  ran inside a savepoint) are recorded through the store of deferred
 *	  changes (capture_spill.h), which keeps them, on disk beyond work_mem,
 *	  until that subtransaction commits, and makes them unrecorded again
 *	  (ahead of anything pending) if it aborts, so that no captured change
 *	  loses its entry and none is held in memory for it.
 *
 *	  Implemented in src/capture_batch.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_CAPTURE_BATCH_H
#define KZ_CAPTURE_BATCH_H

#include "stamp.h"

/* Define kizunasync.capture_batch and install the executor hooks. */
extern void kz_capture_batch_init(void);

/* Capture changes[0 .. n-1] (from the capture trigger). */
extern void kz_capture_batch_add(const KzChange *changes, int n);

/* Record every pending change now. */
extern PGDLLEXPORT void kz_capture_batch_flush(void);

/*
 * Record what the transaction's write-time budget allows now and keep the
 * rest for the commit, as at a statement's end (for an entry point that only
 * reads the bookkeeping: the transaction's own entries are in flight to it
 * either way).
 */
extern void kz_capture_batch_flush_early(void);

/*
 * How many changes a transaction numbers while it runs (the rest it numbers
 * at commit): kizunasync.write_time_changes, or the share of the cursor's
 * hole limit it gives by default.
 */
extern int	kz_capture_batch_write_time_budget(void);

#endif							/* KZ_CAPTURE_BATCH_H */
