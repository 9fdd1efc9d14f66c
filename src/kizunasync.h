/*-------------------------------------------------------------------------
 *
 * kizunasync.h
 *	  The module entry point (kizunasync.c): PG_MODULE_MAGIC and _PG_init,
 *	  which defines the extension's GUCs.  kizunasync.c sits at the top of
 *	  src/: it includes the files whose settings it defines, and no file
 *	  includes this header.
 *
 * Shared constants live below every file that uses them: the protocol's
 * SQLSTATEs in errors.h, the schema name in bookkeeping.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KIZUNASYNC_H
#define KIZUNASYNC_H

/* kizunasync.c */
extern void _PG_init(void);

#endif							/* KIZUNASYNC_H */
