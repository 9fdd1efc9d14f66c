/*-------------------------------------------------------------------------
 *
 * siphash.h
 *	  SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit hash that
 *	  whoever does not hold the key can neither compute nor invert.  The
 *	  bucket numbers of the entries use it with a key per synced table
 *	  (entry.c).  Implemented in src/siphash.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_SIPHASH_H
#define KZ_SIPHASH_H

#define KZ_SIPHASH_KEY_LEN	16

extern PGDLLEXPORT uint64 kz_siphash24(const uint8 *key, const void *data, size_t len);

#endif							/* KZ_SIPHASH_H */
