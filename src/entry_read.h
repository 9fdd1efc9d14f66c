/*-------------------------------------------------------------------------
 *
 * entry_read.h
 *	  Reading and removing entries by statement (decisions/0092): the
 *	  lookups of push, repair and resync, retention (a pull's reads are
 *	  entry_window.h).  Every function must be called inside SPI.
 *	  Implemented in src/entry_read.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ENTRY_READ_H
#define KZ_ENTRY_READ_H

#include "nodes/pg_list.h"

#include "entry.h"
#include "tableconf.h"

/* The binary key of a row key text of table conf. */
extern bytea *kz_entry_conf_key(const KzTableConf *conf, const char *pk);

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

/* The highest seq of a tombstone, 0 when there is none. */
extern int64 kz_entry_max_tombstone_seq(void);

/* The highest seq of a row entry of one bucket of conf, or 0.  Inside SPI. */
extern int64 kz_entry_bucket_max_seq(const KzTableConf *conf, int64 bucket);

/* ----------------------------------------------------------- retention */

/*
 * The ids (int List) of the tables the entries hold rows of that are no
 * longer synced (left by a transaction that raced unsync_table), found by
 * a loose scan of the key index (one probe per table).  Inside SPI.
 */
extern List *kz_entry_orphan_tables(void);

/*
 * Remove at most max_rows row entries of table tid, skipping locked ones
 * (its tombstones go with the reap, under the default TTL); how many.
 * Inside SPI.
 */
extern uint64 kz_entry_remove_table(int32 tid, int64 max_rows);

/* Remove at most max_rows journal rows whose winning entry is gone; how many.  Inside SPI. */
extern uint64 kz_entry_compact_journal(int32 max_rows);

/*
 * Forget every entry and bucket number of a synced table, by wire name,
 * while its synced_tables row still gives its id (unsync).  Inside SPI.
 */
extern void kz_entry_forget_table(const char *table_name);

#endif							/* KZ_ENTRY_READ_H */
