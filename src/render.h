/*-------------------------------------------------------------------------
 *
 * render.h
 *	  Rendering application rows as the wire carries them: to_jsonb of the
 *	  columns the current user may read, read under its RLS policies.  The
 *	  statements run as the current user (the caller) and read ONLY the
 *	  synced table, never inheritance children.  Must be called inside SPI.
 *	  Implemented in src/render.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_RENDER_H
#define KZ_RENDER_H

#include "utils/jsonb.h"

#include "tabledesc.h"

/*
 * Extra equalities a batch render may add ("t.col = value"): columns of the
 * table with a value of the column's type.  A row they exclude must be one
 * the caller would discard anyway (pull: a row outside the bucket).
 */
typedef struct KzRenderFilter
{
	int			n;
	const KzColumn **cols;
	Datum	   *values;
} KzRenderFilter;

/*
 * Render the rows whose key texts are pks[0 .. n-1] (canonical key text;
 * duplicates allowed): rows[i] is the row or NULL when there is none the
 * caller may see (or filter, when not NULL, excludes).  One statement for
 * the batch; the results stay valid until SPI_finish.
 */
extern void kz_render_batch(KzTableDesc *t, char **pks, int n, Jsonb **rows,
							const KzRenderFilter *filter);

/*
 * Render one row by key values (key order, typed as conf->key_types), or
 * NULL.  With lock, the row is locked FOR NO KEY UPDATE (and NULL is also
 * the answer when the caller may not update the table).  The result is a
 * copy in the current memory context.
 */
extern Jsonb *kz_render_row(KzTableDesc *t, Datum *keyvals, bool lock);

/* "t.k1 OPERATOR(pg_catalog.=) $<base+1> AND ..." over the key columns. */
extern char *kz_render_key_predicate(KzTableDesc *t, int base);

#endif							/* KZ_RENDER_H */
