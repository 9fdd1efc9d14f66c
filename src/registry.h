/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  The optional client registry (kizunasync.clients, SPEC 4.12 and
 *	  5.11): the last cursor a client was given, the reap horizon when its
 *	  latest bootstrap began, its last accepted mutation and schema
 *	  version.  A client id never moves to another user; at most
 *	  KZ_REGISTRY_PER_USER registrations are kept per user.
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
 * just handed out by a pull; when that pull began a bootstrap (it was from
 * cursor 0), bootstrap_began is true and reaped_seq the reap horizon it
 * saw.  last_mutation_id, when not NULL, is the last mutation the push
 * accepted.  A client registered to another user is 42501 (the calling
 * entry point names itself in the error's context).
 */
extern void kz_registry_touch(const char *sub, const pg_uuid_t *client, int32 schema_version,
							  const text *cursor, bool bootstrap_began, int64 reaped_seq,
							  const char *last_mutation_id);

/*
 * The reap horizon when client's (of sub) latest bootstrap began; false
 * when the registry does not know one.
 */
extern bool kz_registry_bootstrap_horizon(const char *sub, const pg_uuid_t *client,
										  int64 *horizon);

/*
 * What a read-only pull needs of the registry without writing it: 42501
 * (as kz_registry_touch) when client is registered to another user; true
 * and *horizon when the registry knows when client's latest bootstrap
 * began.
 */
extern bool kz_registry_read(const char *sub, const pg_uuid_t *client, int64 *horizon);

#endif							/* KZ_REGISTRY_H */
