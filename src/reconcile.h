/*-------------------------------------------------------------------------
 *
 * reconcile.h
 *	  Bringing a synced table's bookkeeping in line with its rows: the seed
 *	  at provisioning (every row gets an entry) and the repair after writes
 *	  that were not captured (replica-mode backfills and restores, writes
 *	  with triggers disabled).  The table is read and its values rendered
 *	  as its owner under SECURITY_RESTRICTED_OPERATION; the changes are
 *	  numbered like any other.  Implemented in src/reconcile.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_RECONCILE_H
#define KZ_RECONCILE_H

#include "tableconf.h"

/* Record an entry for every row (the table is locked against writers). */
extern int64 kz_reconcile_seed(const KzTableConf *conf);

/*
 * Record what the bookkeeping misses: an entry for every row whose latest
 * version was not captured (or whose bucket moved), a tombstone for every
 * entry whose row is gone.  Safe beside live traffic: a row is locked
 * (FOR SHARE) before it is recorded, so a concurrent writer's own capture
 * is never overwritten with an older image.  Returns the changes recorded.
 */
extern int64 kz_reconcile_repair(const KzTableConf *conf);

#endif							/* KZ_RECONCILE_H */
