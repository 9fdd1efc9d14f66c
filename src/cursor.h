/*-------------------------------------------------------------------------
 *
 * cursor.h
 *	  Backend API of the cursor token codec (cursor.c), for pull.
 *
 * The grammar, the limits (KZ_CURSOR_MAX_HOLES, KZ_CURSOR_MAX_LEN) and the
 * KzCursor struct live in cursor_core.h, which builds without the backend.
 * Every parse error is raised as ERRCODE_INVALID_PARAMETER_VALUE (22023)
 * with errmsg `invalid cursor token: "<token>"` (long tokens shortened) and
 * an errdetail naming the reason; see decisions/0040-cursor-limits.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_CURSOR_H
#define KZ_CURSOR_H

#include "cursor_core.h"

/*
 * Parse a cursor argument as the fmgr hands it over: isnull raises the null
 * cursor error; a datum whose raw size exceeds KZ_CURSOR_MAX_LEN is refused
 * before it is detoasted.
 */
extern void kz_cursor_from_datum(Datum value, bool isnull, KzCursor *out);

/* Parse a detoasted text; NULL raises the null cursor error. */
extern void kz_cursor_from_text(const text *t, KzCursor *out);

/* Parse len bytes (for tokens taken out of a JSON body); NULL s = null. */
extern void kz_cursor_from_bytes(const char *s, size_t len, KzCursor *out);

/*
 * Encode a cursor as a palloc'd text in the current memory context.  A
 * cursor that breaks the grammar (negative value, hole out of range or out
 * of order, too many holes) raises 22023 "cannot encode cursor token".
 */
extern text *kz_cursor_to_text(const KzCursor *c);

#endif							/* KZ_CURSOR_H */
