/*-------------------------------------------------------------------------
 *
 * entry.h
 *	  The entries of the bookkeeping (decisions/0092): for each (synced
 *	  table, row key, bucket) at most one, the row's latest change or a
 *	  tombstone.  This module alone knows their layout (the table
 *	  kizunasync.entries, its indexes, the bucket numbers of
 *	  kizunasync.buckets and the binary row keys): the write path, the
 *	  scans a pull and its horizon make, and the reads of push, repair,
 *	  retention and the operator views all go through it.
 *	  Implemented in src/entry.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ENTRY_H
#define KZ_ENTRY_H

#include "access/htup.h"
#include "access/sdir.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "bookkeeping.h"
#include "entry_bucket.h"
#include "entry_key.h"

/* One change to record: a row entry ('u') or a tombstone ('d'). */
typedef struct KzChange
{
	char		op;				/* 'u': the row's entry, 'd': a tombstone */
	int32		tid;			/* the table's synced_tables.id */
	char	   *table_name;
	char	   *pk;
	char	   *bucket_value;	/* label; NULL for a NULL value of a bucketed table */
	char	   *snapshot;		/* 'd': bucket snapshot as jsonb text */
	TransactionId row_xmin;		/* 'u': xmin of the row version recorded */
	bool		no_row_elsewhere;	/* 'u': the key has no row entry outside this
									 * change's bucket (an INSERT, or a move whose
									 * tombstone of the old bucket comes first) */
} KzChange;

/*
 * Refuse (55000, hint: update) when the database's SQL objects are those of
 * a release without the entries (0.2.0 and older): this library can neither
 * read nor write their bookkeeping.  Every entry point and the write path
 * call it first; it costs two catalog cache lookups.
 */
extern void kz_entry_check_layout(void);

/* The heap relation of the entries, for a caller that locks an entry by TID. */
extern Oid	kz_entry_relid(void);

/* ----------------------------------------------------------- the write */

/* The entries table opened for recording (stamp.c, kz_stamp_record). */
typedef struct KzEntryWriter
{
	KzBkTable	t;
	Relation	key_index;
	bool	   *first;			/* indexes a pull reads: written inside the section */
	bool	   *skip_row;		/* indexes a row entry has no entry in (the tombstones') */
	bool	   *skip_tomb;		/* ... and a tombstone (none) */
	int			c_seq,
				c_bucket,
				c_tid,
				c_row_xmin,
				c_kind,
				c_key,
				c_deleted_at,
				c_snapshot;
} KzEntryWriter;

/* One entry being recorded: formed outside the section, inserted inside. */
typedef struct KzEntryNew
{
	Datum	   *values;
	bool	   *nulls;
	HeapTuple	tup;
	bool		tomb;			/* a tombstone, else a row entry */
	bool		deferred;		/* a unique check was deferred */
} KzEntryNew;

extern void kz_entry_writer_open(KzEntryWriter *w);
extern void kz_entry_writer_close(KzEntryWriter *w);

/*
 * Delete the entries ch supersedes (the key's entries of ch's bucket, and
 * its row entry in another bucket) and form ch's entry; outside the
 * writers' section: a deletion may wait for another transaction.  What it
 * reads is bounded whatever the number of buckets the key left (entry.c,
 * entry_supersede).
 */
extern void kz_entry_prepare(KzEntryWriter *w, const KzChange *ch, KzEntryNew *e);

/* Inside the section: the heap tuple with seq and the index entries a pull reads. */
extern void kz_entry_insert_first(KzEntryWriter *w, KzEntryNew *e, int64 seq);

/* After it: the key index entry, with its unique check. */
extern void kz_entry_insert_rest(KzEntryWriter *w, KzEntryNew *e);

/* ------------------------------------------------------ key lookups */

/*
 * The newest tombstone of key (of table tid) that snap sees and after which
 * snap sees no row entry of the key: its bucket number and the xmin of its
 * tuple; false when there is none.  Read through the key index with
 * SnapshotAny and snap's visibility rules applied here, so that no
 * predicate lock is taken (decisions/0086): the entries are the
 * extension's, written by every synced write, and a SERIALIZABLE push that
 * read them would conflict with every other one.
 */
extern bool kz_entry_key_tombstone(int32 tid, const bytea *key, Snapshot snap,
								   int64 *bucket, TransactionId *xmin);

/* ------------------------------------------------ scans for the horizon */

/*
 * A scan of entry tuples with SnapshotAny (every version, whatever its
 * state): by seq over [lo, hi] in either direction, or over one bucket's
 * entries with seq in [lo, hi], ascending.  The horizon classifies the
 * tuples it returns (horizon.c).
 */
typedef struct KzEntryScan
{
	Relation	heap;
	Relation	index;
	struct IndexScanDescData *scan;
	struct TupleTableSlot *slot;
	ScanDirection dir;
	int			seen;			/* tuples returned */
	AttrNumber	a_bucket;		/* the heap's bucket column */
} KzEntryScan;

extern void kz_entry_scan_seqs(KzEntryScan *s, int64 lo, int64 hi, ScanDirection dir);
extern void kz_entry_scan_bucket(KzEntryScan *s, int64 bucket, int64 lo, int64 hi);

/* The same scan of a bucket scan, now over another bucket (one descent, no reopening). */
extern void kz_entry_scan_bucket_again(KzEntryScan *s, int64 bucket, int64 lo, int64 hi);

/* The next tuple: its seq and header (valid until the next call). */
extern bool kz_entry_scan_next(KzEntryScan *s, int64 *seq, HeapTupleHeader *htup);

/* The bucket number of the tuple kz_entry_scan_next returned last. */
extern int64 kz_entry_scan_bucket_of(KzEntryScan *s);
extern void kz_entry_scan_end(KzEntryScan *s);

/* The highest seq with a tuple in the heap (any state), or 0. */
extern int64 kz_entry_max_seq(void);

/*
 * Every entry tuple on a page the visibility map does not mark all-visible
 * (where every entry in flight lies) whose inserting transaction is not
 * known committed or aborted: note(arg, raw xmin, seq, tid) for each.
 */
typedef void (*KzEntryNoteFn) (void *arg, TransactionId xmin, int64 seq, int32 tid);
extern void kz_entry_scan_unsettled(KzEntryNoteFn note, void *arg);

#endif							/* KZ_ENTRY_H */
