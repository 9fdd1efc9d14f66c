/*-------------------------------------------------------------------------
 *
 * entry_bucket.h
 *	  Bucket numbers and their labels: the number the entries carry for a
 *	  bucket value (a keyed hash), and kizunasync.buckets, which gives the
 *	  label back.  Implemented in src/entry_bucket.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ENTRY_BUCKET_H
#define KZ_ENTRY_BUCKET_H

/* The number of a NULL bucket value: no pull ever reads it. */
#define KZ_ENTRY_NULL_BUCKET	INT64CONST(0)

/* The number of a label of table tid (a hash; KZ_ENTRY_NULL_BUCKET for NULL). */
extern PGDLLEXPORT int64 kz_entry_bucket_number(int32 tid, const char *label);

/*
 * The number of bucket value label of table tid; with create (the write
 * path), kizunasync.buckets is sure to hold the label once this
 * transaction commits.
 */
extern int64 kz_entry_bucket(int32 tid, const char *label, bool create);

#endif							/* KZ_ENTRY_BUCKET_H */
