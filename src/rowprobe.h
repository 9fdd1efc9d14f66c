/*-------------------------------------------------------------------------
 *
 * rowprobe.h
 *	  Does a row with given key values exist in a synced table, whatever
 *	  any caller may see, and has the current transaction written it?  A
 *	  direct probe of the table's primary-key index (with a fresh snapshot,
 *	  or with none), as the table's owner under
 *	  SECURITY_RESTRICTED_OPERATION (the index's comparison functions are
 *	  the owner's code).  Implemented in src/rowprobe.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ROWPROBE_H
#define KZ_ROWPROBE_H

#include "tableconf.h"

/* keyvals in key order, typed as conf->key_types */
extern bool kz_row_exists(const KzTableConf *conf, Datum *keyvals);

/*
 * changed[i]: has the current transaction (or one of its subtransactions
 * still alive) inserted, updated or deleted a version of the row whose key
 * text is pks[i]?  Every version the primary-key index leads to is read,
 * whoever may see it (SnapshotAny), so a row the transaction deleted, moved
 * to another key, or changed in a way the caller's policies hide counts
 * too.  Rolled-back subtransactions' versions do not count.
 */
extern void kz_rows_changed_in_xact(const KzTableConf *conf, char **pks, int n,
									bool *changed);

#endif							/* KZ_ROWPROBE_H */
