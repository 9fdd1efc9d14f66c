/*-------------------------------------------------------------------------
 *
 * stamp.h
 *	  Numbering: drawing a change's seq and recording its entry, inside the
 *	  section that writers enter one at a time, so that seq order is the
 *	  order of the entries' inserts (decisions/0010-sequencing.md,
 *	  Invariant S).
 *	  Implemented in src/stamp.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_STAMP_H
#define KZ_STAMP_H

#include "entry.h"

/* Longest row key and bucket value text an entry may carry (bytes). */
#define KZ_MAX_KEY_BYTES	1024
#define KZ_MAX_BUCKET_BYTES	1024

/*
 * Record changes[0 .. n-1] in order: for each, delete the entries it
 * supersedes (outside the section), then draw its seq and insert its entry
 * inside the section, in chunks.  Returns the last seq drawn.  Runs no code
 * of anybody's but PostgreSQL's, and no SQL but the insert of a bucket label
 * the entries have not met before (entry.c).
 */
extern int64 kz_stamp_record(const KzChange *changes, int n);

/*
 * The same for changes the capture trigger captured from this
 * transaction's writes: also after the transaction switched to READ ONLY,
 * which kz_stamp_record refuses (as nextval() does).
 */
extern int64 kz_stamp_record_captured(const KzChange *changes, int n);

/* Has the current transaction recorded any entry? */
extern bool kz_stamp_xact_recorded(void);

/*
 * Seqs the current transaction has drawn and holds: those of its
 * subtransactions that were rolled back are not counted (their entries are
 * dead).
 */
extern int64 kz_stamp_xact_held(void);

/*
 * Refuse (54000) a key or bucket value text too long for an entry, naming
 * the table; called where the change is captured.
 */
extern void kz_stamp_check_lengths(const char *table_name, const char *pk,
								   const char *bucket_value);

/*
 * Test-only wait point: when key is non-zero, a writer that has drawn a seq
 * waits, before inserting its entry (inside the section), for a shared
 * transaction-level advisory lock on key.  Every other writer waits for the
 * section meanwhile, uninterruptibly: the session holding the advisory
 * lock must not write synced rows.  Declared in SQL by the test setup only.
 */
extern PGDLLEXPORT void kz_stamp_set_wait_after_draw(int64 key);

#endif							/* KZ_STAMP_H */
