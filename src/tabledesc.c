/*-------------------------------------------------------------------------
 *
 * tabledesc.c
 *	  A synced table as one call sees it (tabledesc.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "lib/stringinfo.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "tabledesc.h"

static bool
tabledesc_priv(Oid relid, AttrNumber attnum, Oid role, AclMode mode)
{
	return pg_class_aclcheck(relid, role, mode) == ACLCHECK_OK ||
		pg_attribute_aclcheck(relid, attnum, role, mode) == ACLCHECK_OK;
}

/* A private copy of a table's config: the shared cache may be reset mid-call. */
static KzTableConf *
tabledesc_copy_conf(const KzTableConf *src)
{
	KzTableConf *c = palloc(sizeof(KzTableConf));
	int			i;

	memcpy(c, src, sizeof(KzTableConf));
	c->table_name = pstrdup(src->table_name);
	c->bucket_column = src->bucket_column ? pstrdup(src->bucket_column) : NULL;
	c->soft_delete_column = src->soft_delete_column ? pstrdup(src->soft_delete_column) : NULL;
	c->key_columns = palloc(sizeof(char *) * src->nkeys);
	c->key_attnums = palloc(sizeof(AttrNumber) * src->nkeys);
	c->key_types = palloc(sizeof(Oid) * src->nkeys);
	for (i = 0; i < src->nkeys; i++)
	{
		c->key_columns[i] = pstrdup(src->key_columns[i]);
		c->key_attnums[i] = src->key_attnums[i];
		c->key_types[i] = src->key_types[i];
	}
	return c;
}

KzTableDesc *
kz_tabledesc_open(const char *table_name, Oid role, bool missing_ok)
{
	KzTableConf *shared = kz_tableconf_by_name(table_name, missing_ok);
	KzTableDesc *t;
	KzTableConf *conf;
	Relation	rel;
	TupleDesc	desc;
	StringInfoData proj;
	int			i;

	if (shared == NULL)
		return NULL;
	t = palloc0(sizeof(KzTableDesc));
	t->conf = conf = tabledesc_copy_conf(shared);

	/* kept locked to the end of the transaction: the statements follow it */
	rel = table_open(conf->relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	t->qualname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											 RelationGetRelationName(rel));
	t->owner = rel->rd_rel->relowner;
	t->cols = palloc0(sizeof(KzColumn) * Max(desc->natts, 1));
	t->can_delete = pg_class_aclcheck(conf->relid, role, ACL_DELETE) == ACLCHECK_OK;
	t->can_update_any = pg_class_aclcheck(conf->relid, role, ACL_UPDATE) == ACLCHECK_OK ||
		pg_attribute_aclcheck_all(conf->relid, role, ACL_UPDATE, ACLMASK_ANY) == ACLCHECK_OK;
	t->keys_readable = true;
	initStringInfo(&proj);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		KzColumn   *c;
		int			k;

		if (att->attisdropped)
			continue;
		c = &t->cols[t->ncols++];
		c->name = pstrdup(NameStr(att->attname));
		c->attnum = att->attnum;
		c->typid = att->atttypid;
		c->typmod = att->atttypmod;
		c->basetype = getBaseType(att->atttypid);
		c->typname_sql = format_type_extended(att->atttypid, att->atttypmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
		c->generated = att->attgenerated != '\0';
		c->can_select = tabledesc_priv(conf->relid, att->attnum, role, ACL_SELECT);
		c->can_insert = tabledesc_priv(conf->relid, att->attnum, role, ACL_INSERT);
		c->can_update = tabledesc_priv(conf->relid, att->attnum, role, ACL_UPDATE);
		for (k = 0; k < conf->nkeys; k++)
			if (conf->key_attnums[k] == att->attnum)
				c->is_key = true;
		if (c->is_key && !c->can_select)
			t->keys_readable = false;
		if (c->can_select)
			appendStringInfo(&proj, "%st.%s", proj.len ? ", " : "", quote_identifier(c->name));
	}
	table_close(rel, NoLock);
	t->projection = proj.len ? proj.data : NULL;
	return t;
}

KzColumn *
kz_tabledesc_column(KzTableDesc *t, const char *name)
{
	int			i;

	for (i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i].name, name) == 0)
			return &t->cols[i];
	return NULL;
}
