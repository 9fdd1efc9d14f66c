/*-------------------------------------------------------------------------
 *
 * tabledesc.h
 *	  A synced table as one pull or push call sees it: a private copy of its
 *	  configuration, its qualified name, and its live columns with the
 *	  caller's privileges on each.  The relation stays locked
 *	  (AccessShareLock) to the end of the transaction, so the statements
 *	  built from the description match the table they run against.
 *	  Implemented in src/tabledesc.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_TABLEDESC_H
#define KZ_TABLEDESC_H

#include "access/attnum.h"

#include "tableconf.h"

typedef struct KzColumn
{
	char	   *name;
	AttrNumber	attnum;
	Oid			typid;			/* declared type */
	int32		typmod;
	Oid			basetype;		/* domains resolved */
	char	   *typname_sql;	/* format_type of the declared type, qualified */
	bool		generated;		/* attgenerated != '' */
	bool		is_key;
	bool		can_select;		/* the caller's privileges */
	bool		can_insert;
	bool		can_update;
} KzColumn;

typedef struct KzTableDesc
{
	KzTableConf *conf;			/* private copy */
	char	   *qualname;		/* quoted schema.table */
	Oid			owner;
	int			ncols;			/* live columns, attnum order */
	KzColumn   *cols;
	bool		can_delete;
	bool		can_update_any; /* UPDATE on the table or on some column */
	bool		keys_readable;	/* SELECT on every key column */
	char	   *projection;		/* "t.c1, t.c2" of readable columns; NULL: none */
} KzTableDesc;

/*
 * Describe synced table table_name for role.  NULL when it is not synced
 * and missing_ok.
 */
extern KzTableDesc *kz_tabledesc_open(const char *table_name, Oid role, bool missing_ok);

/* A live column by name, or NULL. */
extern KzColumn *kz_tabledesc_column(KzTableDesc *t, const char *name);

#endif							/* KZ_TABLEDESC_H */
