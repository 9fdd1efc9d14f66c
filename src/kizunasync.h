/*-------------------------------------------------------------------------
 *
 * kizunasync.h
 *	  Declarations shared between the backend-side source files.
 *
 * Files that include <jansson.h> must not include utils/builtins.h (its
 * json_object() clashes with jansson's); keep jansson use in files of its own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KIZUNASYNC_H
#define KIZUNASYNC_H

#include "errors.h"

/* Name of the extension's schema; it is fixed (the extension is not relocatable). */
#define KZ_SCHEMA "kizunasync"

/* Custom SQLSTATEs of the protocol. */
#define ERRCODE_KZ_PULL_BUCKET_REQUIRED		MAKE_SQLSTATE('K','Z','L','0','1')
#define ERRCODE_KZ_PULL_COLUMN_POLICY		MAKE_SQLSTATE('K','Z','L','0','2')
#define ERRCODE_KZ_PULL_NEEDS_PRIMARY		MAKE_SQLSTATE('K','Z','L','0','3')
#define ERRCODE_KZ_PUSH_PULL_ONLY			MAKE_SQLSTATE('K','Z','P','0','1')
#define ERRCODE_KZ_PUSH_BATCH_TOO_LARGE		MAKE_SQLSTATE('K','Z','P','0','2')
#define ERRCODE_KZ_PUSH_ATOMIC_REQUIRED		MAKE_SQLSTATE('K','Z','P','0','3')

/* kizunasync.c */
extern void _PG_init(void);

#endif							/* KIZUNASYNC_H */
