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

#include "access/htup.h"
#include "access/skey.h"
#include "nodes/execnodes.h"
#include "utils/relcache.h"

/* Name of the extension's schema; it is fixed (the extension is not relocatable). */
#define KZ_SCHEMA "kizunasync"

/* OID of a relation (table, index or sequence) of schema kizunasync. */
extern Oid	kz_bk_relid(const char *name);

/* A bookkeeping table opened for writing, with all its indexes. */
typedef struct KzBkTable
{
	Relation	heap;
	int			nindexes;
	Relation   *indexes;
	IndexInfo **infos;
	bool	   *partial;		/* a partial index: its predicate is the caller's to apply */
	TupleTableSlot *slot;
} KzBkTable;

extern void kz_bk_open(KzBkTable *t, const char *name);
extern void kz_bk_close(KzBkTable *t);

/* The index of t named name (an error when it has none). */
extern Relation kz_bk_index(KzBkTable *t, const char *name);

/* The 0-based position of column name in t's tuples (an error when none). */
extern int	kz_bk_column(KzBkTable *t, const char *name);

/*
 * A palloc'd copy of the live tuple of t that index finds with the caller's
 * scan keys (SnapshotSelf: no predicate lock, decisions/0086), or NULL.
 */
extern HeapTuple kz_bk_fetch(KzBkTable *t, Relation index, int nkeys, ScanKey keys);

/*
 * Delete the live tuple of t whose key in unique index (a btree on text
 * columns) equals keys[0..nkeys-1], looking with SnapshotSelf (every
 * committed tuple, and the current transaction's own once the caller has
 * run CommandCounterIncrement; no predicate lock, decisions/0086).  A tuple
 * deleted by a transaction that committed meanwhile is looked up again; one
 * being deleted by a running transaction is waited for.  Returns whether a tuple was deleted.
 */
extern bool kz_bk_delete_unique(KzBkTable *t, Relation index, int nkeys,
								const char *const *keys);

/* At most this many tuples of one key are deleted by kz_bk_delete_all_nowait(). */
#define KZ_BK_MAX_DUPLICATES	8

/*
 * Delete every live tuple of t whose key in index (a btree on text columns,
 * not necessarily unique) equals keys[0..nkeys-1], looking with SnapshotSelf
 * as kz_bk_delete_unique() does, but never waiting: a tuple that another
 * running transaction deletes or has locked is left to it (if that
 * transaction rolls back, the tuple stays).  Returns how many were deleted.
 */
extern int	kz_bk_delete_all_nowait(KzBkTable *t, Relation index, int nkeys,
									const char *const *keys);

/*
 * Insert a tuple into t and into the indexes i with first[i] (positions in
 * t->indexes), without ever waiting for another transaction: a unique key
 * that another tuple may hold is only noted (*deferred).  Returns the tuple
 * (t_self set) for kz_bk_insert_rest().
 */
extern HeapTuple kz_bk_insert_first(KzBkTable *t, Datum *values, bool *nulls,
									const bool *first, bool *deferred);

/*
 * The rest of the insert of tup: the indexes not in first (unique checks
 * may wait for another transaction and fail with 23505), but those in skip
 * (a partial index whose predicate tup fails: the caller applies it; NULL
 * when t has none), and, when deferred, the unique checks of those in
 * first.  Frees tup.
 */
extern void kz_bk_insert_rest(KzBkTable *t, HeapTuple tup, const bool *first, const bool *skip,
							  bool deferred);

#endif							/* KZ_BOOKKEEPING_H */
