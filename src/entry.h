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
#include "utils/timestamp.h"

#include "bookkeeping.h"
#include "tableconf.h"

/* One change to record: a row entry ('u') or a tombstone ('d'). */
typedef struct KzChange
{
	char		op;				/* 'u': the row's entry, 'd': a tombstone */
	char	   *table_name;
	char	   *pk;
	char	   *bucket_value;	/* label; NULL for a NULL value of a bucketed table */
	char	   *snapshot;		/* 'd': bucket snapshot as jsonb text */
	TransactionId row_xmin;		/* 'u': xmin of the row version recorded */
} KzChange;

/* ---------------------------------------------------------------- keys */

/* The binary key of a row key text (the wire's "pk"). */
extern bytea *kz_entry_key(const KzTableConf *conf, const char *pk);

/* The row key text of a binary key. */
extern char *kz_entry_key_text(const bytea *key);

/* ------------------------------------------------------------- buckets */

/* The number of a NULL bucket value: no pull ever reads it. */
#define KZ_ENTRY_NULL_BUCKET	INT64CONST(0)

/* The number of a label of table tid (a hash; KZ_ENTRY_NULL_BUCKET for NULL). */
extern int64 kz_entry_bucket_number(int32 tid, const char *label);

/*
 * The number of bucket value label of table conf; with create (the write
 * path), kizunasync.buckets is sure to hold the label once this
 * transaction commits.
 */
extern int64 kz_entry_bucket(const KzTableConf *conf, const char *label, bool create);

/* ----------------------------------------------------------- the write */

/* The entries table opened for recording (stamp.c, kz_stamp_record). */
typedef struct KzEntryWriter
{
	KzBkTable	t;
	Relation	key_index;
	bool	   *first;			/* indexes a pull reads: written inside the section */
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
	bool		deferred;		/* a unique check was deferred */
} KzEntryNew;

extern void kz_entry_writer_open(KzEntryWriter *w);
extern void kz_entry_writer_close(KzEntryWriter *w);

/*
 * Delete the entries ch supersedes (the key's row entry in any bucket, and
 * the key's entry of ch's bucket) and form ch's entry; outside the
 * writers' section: a deletion may wait for another transaction.
 */
extern void kz_entry_prepare(KzEntryWriter *w, const KzChange *ch, KzEntryNew *e);

/* Inside the section: the heap tuple with seq and the index entries a pull reads. */
extern void kz_entry_insert_first(KzEntryWriter *w, KzEntryNew *e, int64 seq);

/* After it: the key index entry, with its unique check. */
extern void kz_entry_insert_rest(KzEntryWriter *w, KzEntryNew *e);

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
} KzEntryScan;

extern void kz_entry_scan_seqs(KzEntryScan *s, int64 lo, int64 hi, ScanDirection dir);
extern void kz_entry_scan_bucket(KzEntryScan *s, int64 bucket, int64 lo, int64 hi);

/* The next tuple: its seq and header (valid until the next call). */
extern bool kz_entry_scan_next(KzEntryScan *s, int64 *seq, HeapTupleHeader *htup);
extern void kz_entry_scan_end(KzEntryScan *s);

/* The highest seq with a tuple in the heap (any state), or 0. */
extern int64 kz_entry_max_seq(void);

/* -------------------------------------------------- the pull's reads */

/* One entry as a pull reads it. */
typedef struct KzEntryRow
{
	int64		seq;
	char	   *pk;
	bool		tomb;
	TimestampTz deleted_at;		/* tombstones */
	TransactionId xmin;			/* of the entry's tuple */
} KzEntryRow;

/*
 * Which entries of one bucket a pull reads: rows, and tombstones when
 * tombs (only tombstones with tombs_only).  For a bucketed table a
 * tombstone must also carry the requested value in its snapshot
 * (snap_col, snap_val).  Either seq in (lo, hi] or seq among seqs.
 */
typedef struct KzEntryQuery
{
	const KzTableConf *conf;
	int64		bucket;
	bool		tombs;
	bool		tombs_only;
	const char *snap_col;		/* NULL: no snapshot condition */
	Jsonb	   *snap_val;
	int64		lo;
	int64		hi;
	const int64 *seqs;			/* NULL: the range */
	int			nseqs;
	int64		limit;			/* 0: no limit */
} KzEntryQuery;

/*
 * The entries q asks for, ascending by seq, read from the transaction's
 * snapshot in a privileged section; rows in *out (palloc'd in the caller's
 * context).  Must be called inside SPI.
 */
extern int	kz_entry_select(const KzEntryQuery *q, KzEntryRow **out);

/* --------------------------------------- reads of push, repair, resync */

/*
 * The key's row entry: its bucket label (NULL for a NULL value), row_xmin
 * (Invalid when none is recorded) and seq; false when the key has none.
 * Read with snap (NULL: the transaction's).  Inside SPI.
 */
extern bool kz_entry_row_of(const KzTableConf *conf, const char *pk, Snapshot snap,
							char **label, TransactionId *row_xmin, int64 *seq);

/*
 * A tombstone of the key with no row entry of a higher seq: the label of
 * its bucket and the xmin of its tuple; false when there is none.  Read
 * with snap.  Inside SPI.
 */
extern bool kz_entry_tombstone_of(const KzTableConf *conf, const char *pk, Snapshot snap,
								  char **label, TransactionId *xmin);

/*
 * The row entries of table conf whose key is past after (NULL: from the
 * first), in key order, at most limit: keys, labels, TIDs.  Inside SPI.
 */
typedef struct KzEntryRef
{
	char	   *pk;
	char	   *label;			/* NULL for a NULL value */
	ItemPointerData tid;
	bytea	   *key;
} KzEntryRef;

extern int	kz_entry_rows_of_table(const KzTableConf *conf, const bytea *after, int limit,
								   KzEntryRef **out);

/* The heap relation of the entries, for a caller that locks an entry by TID. */
extern Oid	kz_entry_relid(void);

/*
 * The row entries of one bucket of conf (seq, key text, row_xmin) with seq
 * <= upto, ascending by seq from after, at most limit.  Inside SPI.
 */
typedef struct KzEntryBucketRow
{
	int64		seq;
	char	   *pk;
	TransactionId row_xmin;
	bool		have_xmin;
} KzEntryBucketRow;

extern int	kz_entry_bucket_rows(const KzTableConf *conf, int64 bucket, int64 after,
								 int64 upto, int limit, bool lock, KzEntryBucketRow **out);

/* Is there a row entry with this seq?  Inside SPI. */
extern bool kz_entry_row_seq_exists(int64 seq);

/*
 * Every entry tuple on a page the visibility map does not mark all-visible
 * (where every entry in flight lies) whose inserting transaction is not
 * known committed or aborted: note(arg, raw xmin, seq, tid) for each.
 */
typedef void (*KzEntryNoteFn) (void *arg, TransactionId xmin, int64 seq, int32 tid);
extern void kz_entry_scan_unsettled(KzEntryNoteFn note, void *arg);

/* The highest seq of a row entry of one bucket of conf, or 0.  Inside SPI. */
extern int64 kz_entry_bucket_max_seq(const KzTableConf *conf, int64 bucket);

/* ----------------------------------------------------------- retention */

/*
 * Remove at most max_rows tombstones older than their table's TTL (else
 * default_ttl_days), oldest seq first, skipping those another transaction
 * holds; the highest seq removed, or 0.  Inside SPI.
 */
extern int64 kz_entry_reap(int32 max_rows, int32 default_ttl_days);

/*
 * Remove at most max_rows entries nothing can deliver any more (of tables
 * no longer synced), and journal rows whose winning entry is gone; the
 * number removed.  Inside SPI.
 */
extern uint64 kz_entry_compact(int32 max_rows);

/* Forget every entry and bucket number of table id tid (unsync).  Inside SPI. */
extern void kz_entry_forget_table(int32 tid);

#endif							/* KZ_ENTRY_H */
