/*-------------------------------------------------------------------------
 *
 * jsonbutil.h
 *	  The jsonb helpers: building jsonb through pushJsonbValue and reading
 *	  keys and scalars as text, shared by pull, push, the ledger, the
 *	  journal and settings.  Pull pages are written by jsonb_writer.h
 *	  instead (straight into the binary form).  Implemented in
 *	  src/jsonbutil.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_JSONBUTIL_H
#define KZ_JSONBUTIL_H

#include "utils/jsonb.h"

/* Building with pushJsonbValue: an object key, or a key and its value. */
extern void kz_jsonb_push_key(JsonbParseState **ps, const char *key);
extern void kz_jsonb_push_string(JsonbParseState **ps, JsonbIteratorToken tok, const char *s);
extern void kz_jsonb_push_kv_string(JsonbParseState **ps, const char *key, const char *s);
extern void kz_jsonb_push_kv_bool(JsonbParseState **ps, const char *key, bool b);
/* j NULL pushes JSON null; a scalar is pushed as a scalar. */
extern void kz_jsonb_push_jsonb(JsonbParseState **ps, JsonbIteratorToken tok, Jsonb *j);
extern void kz_jsonb_push_kv_jsonb(JsonbParseState **ps, const char *key, Jsonb *j);

/*
 * Text of a jsonb value as ->> renders it: strings unquoted, numbers and
 * booleans as jsonb prints them, containers as jsonb text; NULL for JSON null.
 */
extern char *kz_jsonb_text(JsonbValue *v);

/* kz_jsonb_text of a scalar; NULL for JSON null and containers. */
extern char *kz_jsonb_scalar_text(JsonbValue *v);

/* The value of a top-level key of an object as a jsonb, or NULL. */
extern Jsonb *kz_jsonb_get(Jsonb *obj, const char *key);

/* Does an object have a top-level key? */
extern bool kz_jsonb_has_key(Jsonb *obj, const char *key);

/* ->> of a top-level key (NULL for JSON null or absent; *found tells). */
extern char *kz_jsonb_key_text(Jsonb *obj, const char *key, bool *found);

/* The jsonb 'null'. */
extern Jsonb *kz_jsonb_null(void);

#endif							/* KZ_JSONBUTIL_H */
