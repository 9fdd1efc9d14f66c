/*-------------------------------------------------------------------------
 *
 * pgcompat.h
 *	  Every difference between the PostgreSQL majors kizunasync builds
 *	  against, in one place (issue 22): 15 and 17 are built and tested
 *	  (README "Supported PostgreSQL versions"); 16 has the same APIs as 17
 *	  here but is not tested.  The rest of src/ calls only the names below
 *	  where an API moved, never PG_VERSION_NUM itself.
 *
 *	  What moved, as the code uses it:
 *	  - 16 moved the varlena macros into varatt.h, which postgres.h no
 *		longer includes;
 *	  - 16 replaced pg_class_ownercheck, pg_namespace_aclcheck and
 *		pg_proc_aclcheck by object_ownercheck/object_aclcheck, which name
 *		the catalog;
 *	  - 17 moved a backend's local transaction id from MyProc->lxid into
 *		MyProc->vxid.lxid, and renamed pgstat_fetch_stat_local_beentry to
 *		pgstat_get_local_beentry_by_index;
 *	  - 17's makeJsonLexContextCstringLen takes the context to fill (NULL:
 *		allocate one) and a size_t length.
 *	  Everything else src/ calls (SPI, the executor and utility hooks, index
 *	  and table scans, snapshots, jsonb, syscache, latches) has the same
 *	  signature in 15 and 17 (checked against both majors' headers with
 *	  -Wall -Wextra; the pg17 lane builds it).
 *
 *	  Header only (static inline functions): there is no pgcompat.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PGCOMPAT_H
#define KZ_PGCOMPAT_H

#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/backend_status.h"

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 180000
#error "kizunasync builds against PostgreSQL 15, 16 and 17 only"
#endif

/* 16 moved the varlena macros (VARDATA, SET_VARSIZE, ...) out of postgres.h */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/* This backend's local transaction id (changes with every transaction). */
static inline LocalTransactionId
kz_my_lxid(void)
{
#if PG_VERSION_NUM >= 170000
	return MyProc->vxid.lxid;
#else
	return MyProc->lxid;
#endif
}

/*
 * The i-th (1-based) backend of this transaction's snapshot of backend
 * statuses (pgstat_fetch_stat_numbackends() of them), or NULL.
 */
static inline LocalPgBackendStatus *
kz_local_beentry(int i)
{
#if PG_VERSION_NUM >= 170000
	return pgstat_get_local_beentry_by_index(i);
#else
	return pgstat_fetch_stat_local_beentry(i);
#endif
}

/* Does role own the relation relid? */
static inline bool
kz_class_ownercheck(Oid relid, Oid role)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(RelationRelationId, relid, role);
#else
	return pg_class_ownercheck(relid, role);
#endif
}

/* role's privileges mode on schema nsp */
static inline AclResult
kz_namespace_aclcheck(Oid nsp, Oid role, AclMode mode)
{
#if PG_VERSION_NUM >= 160000
	return object_aclcheck(NamespaceRelationId, nsp, role, mode);
#else
	return pg_namespace_aclcheck(nsp, role, mode);
#endif
}

/* role's privileges mode on function fn */
static inline AclResult
kz_proc_aclcheck(Oid fn, Oid role, AclMode mode)
{
#if PG_VERSION_NUM >= 160000
	return object_aclcheck(ProcedureRelationId, fn, role, mode);
#else
	return pg_proc_aclcheck(fn, role, mode);
#endif
}

/* Is s (NUL-terminated) one JSON text?  Never throws. */
static inline bool
kz_json_text_valid(const char *s)
{
	JsonLexContext *lex;

#if PG_VERSION_NUM >= 170000
	lex = makeJsonLexContextCstringLen(NULL, s, strlen(s), GetDatabaseEncoding(), false);
#else
	lex = makeJsonLexContextCstringLen((char *) s, (int) strlen(s), GetDatabaseEncoding(), false);
#endif
	return pg_parse_json(lex, &nullSemAction) == JSON_SUCCESS;
}

#endif							/* KZ_PGCOMPAT_H */
