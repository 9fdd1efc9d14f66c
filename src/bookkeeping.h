/*-------------------------------------------------------------------------
 *
 * bookkeeping.h
 *	  Direct (heap and index) access to the extension's bookkeeping tables,
 *	  for the hot paths that must not parse, plan or resolve names: recording
 *	  an entry and classifying holes.  Implemented in src/bookkeeping.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_BOOKKEEPING_H
#define KZ_BOOKKEEPING_H

#include "nodes/execnodes.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"

/* OID of a relation (table, index or sequence) of schema kizunasync. */
extern Oid	kz_bk_relid(const char *name);

/* A bookkeeping table opened for writing, with all its indexes. */
typedef struct KzBkTable
{
	Relation	heap;
	int			nindexes;
	Relation   *indexes;
	IndexInfo **infos;
	TupleTableSlot *slot;
} KzBkTable;

extern void kz_bk_open(KzBkTable *t, const char *name);
extern void kz_bk_close(KzBkTable *t);

/* The index of t named name (an error when it has none). */
extern Relation kz_bk_index(KzBkTable *t, const char *name);

/*
 * Delete the live tuple of t whose key in unique index (a btree on text
 * columns) equals keys[0..nkeys-1], looking with a fresh snapshot (every
 * committed tuple, and the current transaction's own once the caller has
 * run CommandCounterIncrement).  A tuple deleted by a transaction that
 * committed meanwhile is looked up again; one being deleted by a running
 * transaction is waited for.  Returns whether a tuple was deleted.
 */
extern bool kz_bk_delete_unique(KzBkTable *t, Relation index, int nkeys,
								const char *const *keys);

/*
 * Insert a tuple into t and every index of it, without ever waiting for
 * another transaction: a unique key that another tuple may hold is only
 * noted.  Sets *tid to the new tuple; returns false when a unique index
 * must be checked again with kz_bk_recheck_unique().
 */
extern bool kz_bk_insert_nowait(KzBkTable *t, Datum *values, bool *nulls, ItemPointer tid);

/*
 * The unique checks kz_bk_insert_nowait() deferred for the tuple at tid:
 * waits for a transaction that holds the key, then raises 23505 if that
 * transaction committed it.
 */
extern void kz_bk_recheck_unique(KzBkTable *t, ItemPointer tid);

#endif							/* KZ_BOOKKEEPING_H */
