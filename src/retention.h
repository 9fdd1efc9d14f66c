/*-------------------------------------------------------------------------
 *
 * retention.h
 *	  The reap horizon (kizunasync.reap_state) and the operator functions
 *	  that keep the bookkeeping bounded.  Implemented in src/retention.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_RETENTION_H
#define KZ_RETENTION_H

#include "utils/timestamp.h"

typedef struct KzReapState
{
	int64		reaped_seq;		/* highest seq ever reaped (0: none) */
	TimestampTz reaped_at;		/* when a reap last raised it (0: never) */
	bool		have_first_seq;
	int64		first_seq;		/* first seq of this incarnation of the extension */
} KzReapState;

/* The reap state under the active snapshot (must be called inside SPI). */
extern void kz_reap_state_read(KzReapState *rs);

/*
 * Record the first seq of this incarnation if nothing is recorded yet
 * (provisioning calls it; must be called inside SPI).
 */
extern void kz_reap_state_init(void);

#endif							/* KZ_RETENTION_H */
