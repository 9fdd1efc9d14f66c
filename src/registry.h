/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  The optional client registry (kizunasync.clients, SPEC 4.12 and
 *	  5.11): the last cursor a client was given and the reap horizon the
 *	  pull that gave it saw, its last accepted mutation and schema version.  A client id never moves to another
 *	  user; at most KZ_REGISTRY_PER_USER registrations are kept per user.
 *	  Must be called inside SPI.  Implemented in src/registry.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_REGISTRY_H
#define KZ_REGISTRY_H

#include "utils/uuid.h"

#define KZ_REGISTRY_PER_USER	100

/*
 * Upsert client (registered to sub): cursor, when not NULL, is the cursor
 * just handed out by a pull that saw reap horizon cursor_horizon;
 * last_mutation_id, when not NULL, the last mutation the push accepted.
 * fname names the calling entry point in messages.  A client registered to
 * another user is 42501.
 */
extern void kz_registry_touch(const char *fname, const char *sub, const pg_uuid_t *client,
							  int32 schema_version, const text *cursor, int64 cursor_horizon,
							  const char *last_mutation_id);

/*
 * Was cursor the last one handed out to client (of sub)?  Then *horizon is
 * the reap horizon the pull that handed it out saw.
 */
extern bool kz_registry_cursor_horizon(const char *sub, const pg_uuid_t *client,
									   const text *cursor, int64 *horizon);

#endif							/* KZ_REGISTRY_H */
