/*-------------------------------------------------------------------------
 *
 * identity.h
 *	  Who is calling: the Supabase Data API sets the role with SET LOCAL ROLE
 *	  and the JWT claims in request.jwt.claims.  Our functions are SECURITY
 *	  DEFINER; every read or write of an application table runs as the
 *	  caller's role so its RLS policies and column privileges apply.
 *	  Implemented in src/identity.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_IDENTITY_H
#define KZ_IDENTITY_H

#include "postgres.h"
#include "utils/uuid.h"

/* The caller's role: the role set by SET [LOCAL] ROLE, else the session user. */
extern Oid	kz_caller_role(void);

/* The JWT "sub" claim as a uuid; false when absent.  A non-uuid sub is 22P02. */
extern bool kz_caller_uid(pg_uuid_t *uid);

/* The JWT "session_id" claim as a uuid; false when absent.  A non-uuid is 22P02. */
extern bool kz_jwt_session_id(pg_uuid_t *sid);

/*
 * Run the following SPI work as the caller (RLS and privileges apply):
 *     KzAsCaller save;  kz_as_caller_begin(&save); ...  kz_as_caller_end(&save);
 * An ERROR in between is fine: transaction/subtransaction abort restores the
 * user id.
 */
typedef struct KzAsCaller
{
	Oid			saved_userid;
	int			saved_sec_context;
} KzAsCaller;

extern void kz_as_caller_begin(KzAsCaller *save);
extern void kz_as_caller_end(KzAsCaller *save);

#endif							/* KZ_IDENTITY_H */
