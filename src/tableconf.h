/*-------------------------------------------------------------------------
 *
 * tableconf.h
 *	  The per-table sync configuration (kizunasync.synced_tables), resolved
 *	  against the catalog and cached per backend (invalidated on changes to
 *	  synced_tables or the table's relcache entry).  Implemented in
 *	  src/tableconf.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_TABLECONF_H
#define KZ_TABLECONF_H

#include "access/attnum.h"

#include "bucketlabel.h"

typedef struct KzTableConf
{
	char	   *table_name;		/* wire name */
	Oid			relid;
	bool		pull_only;		/* sync_mode = 'pull-only' */
	char	   *bucket_column;	/* NULL: unbucketed */
	AttrNumber	bucket_attnum;	/* InvalidAttrNumber when unbucketed */
	Oid			bucket_type;
	int			nkeys;
	char	  **key_columns;	/* in key order */
	AttrNumber *key_attnums;
	Oid		   *key_types;		/* base types (domains resolved) */
	bool		hlc;			/* conflict_mode = 'hlc' */
	bool		conflict_journal;
	char	   *soft_delete_column;	/* NULL when none */
	int			tombstone_ttl_days; /* 0: use settings.tombstone_ttl_days */
	int			min_schema_version;
	bool		register_clients;
	bool		wakeup;
	KzLabelKind bucket_kind;	/* kz_label_kind(bucket_type) when loaded */
	bool		bucket_kind_fixed;	/* a built-in or container type: cannot change */
	int32		id;				/* synced_tables.id: the table's number in the entries */
} KzTableConf;

/*
 * Look up by wire name / by relation.  NULL when not synced and missing_ok.
 * The result stays valid until the end of the current transaction.
 */
extern PGDLLEXPORT KzTableConf *kz_tableconf_by_name(const char *table_name, bool missing_ok);
extern PGDLLEXPORT KzTableConf *kz_tableconf_by_relid(Oid relid, bool missing_ok);

/*
 * The label kind of the bucket column's type: the one cached, unless the
 * type is one whose kind a later CREATE or DROP CAST to json changes (as
 * to_jsonb, which looks for the cast at every call).
 */
extern KzLabelKind kz_tableconf_bucket_kind(const KzTableConf *c);

#endif							/* KZ_TABLECONF_H */
