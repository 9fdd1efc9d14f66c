/*-------------------------------------------------------------------------
 *
 * entry_key.h
 *	  Row keys in the binary form the entries carry (decisions/0092).
 *	  Implemented in src/entry_key.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ENTRY_KEY_H
#define KZ_ENTRY_KEY_H

/*
 * The binary key of a row key text (the wire's "pk"), whatever the type of
 * the key column(s) it came from.
 */
extern PGDLLEXPORT bytea *kz_entry_key(const char *pk);

/* The row key text of a binary key. */
extern char *kz_entry_key_text(const bytea *key);

#endif							/* KZ_ENTRY_KEY_H */
