/*-------------------------------------------------------------------------
 *
 * jsonbutil.h
 *	  Small jsonb helpers shared by pull and push.  Implemented in
 *	  src/jsonbutil.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_JSONBUTIL_H
#define KZ_JSONBUTIL_H

#include "postgres.h"
#include "utils/jsonb.h"

/* Push an object key (the caller pushes its value next). */
extern void kz_jsonb_push_key(JsonbParseState **ps, const char *key);

/*
 * Text of a jsonb value as ->> renders it: strings unquoted, numbers and
 * booleans as jsonb prints them, containers as jsonb text; NULL for JSON null.
 */
extern char *kz_jsonb_text(JsonbValue *v);

#endif							/* KZ_JSONBUTIL_H */
