/*-------------------------------------------------------------------------
 *
 * identity.h
 *	  Who is calling, and running code as somebody (decisions/0060).
 *
 *	  Entry points are SECURITY INVOKER: the caller is GetUserId() at entry,
 *	  so application statements simply run as the caller.  Bookkeeping is
 *	  touched inside privileged sections that run as the extension owner
 *	  under SECURITY_RESTRICTED_OPERATION with search_path pinned to
 *	  "pg_catalog, pg_temp".  Code of a table's owner (seeding, wake-up
 *	  hints, key probes) runs as that owner, restricted, like core's
 *	  maintenance commands.  Implemented in src/identity.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_IDENTITY_H
#define KZ_IDENTITY_H

#include "fmgr.h"
#include "utils/uuid.h"

/* The longest JWT "sub" claim accepted (third-party auth ids are text). */
#define KZ_MAX_SUB_BYTES	255

typedef struct KzCaller
{
	Oid			role;			/* the caller: current_user at entry */
} KzCaller;

/*
 * At the start of an SQL-callable entry point: work out the caller, and
 * refuse (42501) inside a security-restricted operation when refuse_sro.
 * fname is the entry point's SQL name, for messages.  An entry point still
 * declared SECURITY DEFINER (the SQL objects of 0.1.0, before ALTER
 * EXTENSION ... UPDATE) refuses to run (55000): it would run as the owner.
 */
extern void kz_entry(FunctionCallInfo fcinfo, const char *fname, bool refuse_sro,
					 KzCaller *caller);

/*
 * The same for an entry point that only reads what the transaction's own
 * statements captured (pull): what the transaction defers to its commit
 * stays deferred (decisions/0010, "Numbering at commit").
 */
extern void kz_entry_reader(FunctionCallInfo fcinfo, const char *fname, bool refuse_sro,
							KzCaller *caller);

/*
 * Run an SQL-callable entry point: body(fcinfo), as fname.  Entry points do
 * not nest: called while another one runs in this backend (application
 * code that a pull or push ran - a trigger, a policy, a column default, a
 * function of a column type - calling kizunasync again), it refuses with
 * 0A000.  Their per-call state (the push's capture queue, its record of
 * deleted rows) belongs to one call at a time.
 */
typedef Datum (*KzEntryBody) (FunctionCallInfo fcinfo);
extern Datum kz_entry_guarded(FunctionCallInfo fcinfo, const char *fname, KzEntryBody body);

/* The same check for a trigger function, whose declaration is tgfoid. */
extern void kz_entry_trigger(Oid tgfoid);

typedef struct KzUserSwitch
{
	Oid			saved_userid;
	int			saved_sec;
	int			guc_level;		/* 0: no GUC nest level */
	bool		switched;
} KzUserSwitch;

/*
 * A privileged section: run as the extension owner, restricted, with
 * search_path = "pg_catalog, pg_temp".  Only our own statements on the
 * bookkeeping run inside; an ERROR in between is fine (abort restores the
 * user id and the GUCs).
 */
extern void kz_priv_begin(KzUserSwitch *s);
extern void kz_priv_end(KzUserSwitch *s);

/*
 * Run as role (a table owner) under SECURITY_RESTRICTED_OPERATION; with
 * pin_path, also with search_path = "pg_catalog, pg_temp".
 */
extern void kz_as_restricted_begin(KzUserSwitch *s, Oid role, bool pin_path);
extern void kz_as_restricted_end(KzUserSwitch *s);

/* The extension owner (owner of schema kizunasync). */
extern Oid	kz_extension_owner(void);

/* The owner of a schema, or InvalidOid when there is none. */
extern Oid	kz_namespace_owner(const char *name);

/* The owner of a relation. */
extern Oid	kz_rel_owner(Oid relid);

/*
 * The JWT "sub" claim (request.jwt.claim.sub wins, as in Supabase's
 * auth.uid()), palloc'd; NULL when absent or empty.  Any non-empty text is
 * accepted (Supabase Auth issues uuids, third-party auth providers other
 * ids); longer than KZ_MAX_SUB_BYTES is 28000.
 */
extern char *kz_jwt_sub(void);

/* The JWT "session_id" claim; false when absent; a non-uuid is 22P02. */
extern bool kz_jwt_session_id(pg_uuid_t *sid);

/* The JWT "role" claim, or NULL. */
extern char *kz_jwt_role(void);

#endif							/* KZ_IDENTITY_H */
