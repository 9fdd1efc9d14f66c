/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  Deployment settings: the zero-or-one row of kizunasync.settings, whose
 *	  NULL (or absent) values take the defaults defined in settings.c (the
 *	  only place they are defined).  Implemented in src/settings.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_SETTINGS_H
#define KZ_SETTINGS_H

#include "fmgr.h"

typedef struct KzSettings
{
	int			max_pull_scan;
	int			max_pull_limit;
	int			max_batch_size;
	bool		require_atomic;
	int			tombstone_ttl_days;
	int			client_ttl_days;
	int			hlc_max_skew_ms;
	int			pull_wait_ms;
	char	   *reap_schedule;
	char	   *compact_schedule;
	char	   *client_prune_schedule;
	int			max_pull_buckets;
} KzSettings;

/* The effective settings (must be called inside SPI). */
extern void kz_settings_read(KzSettings *s);

#endif							/* KZ_SETTINGS_H */
