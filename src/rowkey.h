/*-------------------------------------------------------------------------
 *
 * rowkey.h
 *	  Row key text ("pk" on the wire): one key column renders as the value's
 *	  to_jsonb text without JSON quotes (a lowercase uuid, "7"); several key
 *	  columns render as the jsonb text of an array of strings, e.g.
 *	  ["1", "12"].  Key types: uuid, text, varchar, smallint, integer, bigint.
 *	  Implemented in src/rowkey.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ROWKEY_H
#define KZ_ROWKEY_H

#include "utils/relcache.h"

#include "tableconf.h"

/* Render the row key of a row whose key column values are given in key order. */
extern char *kz_rowkey_render(const KzTableConf *conf, const Datum *values, const bool *isnull);

/*
 * Parse wire pk text into key column values (key order, typed as
 * conf->key_types).  Returns false (no error) when the text is not the
 * canonical key text of the table: wrong shape, a value the type refuses,
 * or a spelling that does not re-render to the same bytes.
 */
extern PGDLLEXPORT bool kz_rowkey_parse(const KzTableConf *conf, const char *pk, Datum *values);

/*
 * Refuse (0A000) a table whose primary key column or index has a
 * nondeterministic collation: a row key is its text byte for byte.
 */
extern void kz_rowkey_check_collations(Relation rel);

#endif							/* KZ_ROWKEY_H */
