/*-------------------------------------------------------------------------
 *
 * rowprobe.h
 *	  Does a row with given key values exist in a synced table, whatever
 *	  any caller may see?  A direct probe of the table's primary-key index
 *	  with a fresh snapshot, as the table's owner under
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

#endif							/* KZ_ROWPROBE_H */
