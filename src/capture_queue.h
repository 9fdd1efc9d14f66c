/*-------------------------------------------------------------------------
 *
 * capture_queue.h
 *	  The push queue: while it is on, the capture trigger does not number
 *	  changes, it queues them (in capture order, in TopTransactionContext).
 *	  Push turns it on around a mutation (or a whole atomic batch), then
 *	  flushes (numbers and records every queued change, in order) or
 *	  discards (the mutation was rejected, or the batch aborted).  A rejected
 *	  mutation or an aborted batch therefore draws no seq.  Subtransaction
 *	  abort drops what the subtransaction queued (and turns queuing off if
 *	  it was turned on inside it); transaction end clears everything.
 *	  Implemented in src/capture_queue.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_CAPTURE_QUEUE_H
#define KZ_CAPTURE_QUEUE_H

#include "stamp.h"

/* Turn queuing on; the caller flushes pending batched changes first. */
extern PGDLLEXPORT void kz_capture_queue_begin(void);
extern PGDLLEXPORT void kz_capture_queue_flush(void);
extern PGDLLEXPORT void kz_capture_queue_discard(void);
extern PGDLLEXPORT void kz_capture_queue_end(void);	/* ERROR if changes are left unflushed */

/* Is queuing on? */
extern bool kz_capture_queue_active(void);

/* Number of changes queued now. */
extern PGDLLEXPORT int	kz_capture_queue_length(void);

/*
 * Record changes now, or queue them when queuing is on (called by the
 * capture trigger).
 */
extern void kz_capture_emit(const KzChange *changes, int n);

/*
 * Op of the newest change still queued for (table_name, pk) in this
 * transaction: 'u' (upsert), 'd' (delete) or '\0' (none queued).
 */
extern PGDLLEXPORT char kz_capture_queued_op(const char *table_name, const char *pk);

#endif							/* KZ_CAPTURE_QUEUE_H */
