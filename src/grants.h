/*-------------------------------------------------------------------------
 *
 * grants.h
 *	  Bucket grants: the (user, table, bucket value) pairs a user has
 *	  received a live row from, which entitle it to that bucket value's
 *	  tombstones (decisions/0024).  Keyed by the JWT "sub" text.  Must be
 *	  called inside SPI.  Implemented in src/grants.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_GRANTS_H
#define KZ_GRANTS_H

/* Does sub hold a grant for (table_name, bucket_value)? */
extern bool kz_grants_held(const char *sub, const char *table_name, const char *bucket_value);

/*
 * held[i] = does sub hold a grant for (tables[i], values[i]), i < n: one
 * statement for all of them (a pull naming many buckets).
 */
extern void kz_grants_held_many(const char *sub, const char **tables, const char **values,
								int n, bool *held);

/*
 * Record grants for sub on the pairs (tables[i], values[i]), i < n
 * (duplicates allowed).  Inserted in (table, value) order, so two pulls of
 * one user never deadlock on each other's grants.
 */
extern void kz_grants_record(const char *sub, const char **tables, const char **values, int n);

#endif							/* KZ_GRANTS_H */
