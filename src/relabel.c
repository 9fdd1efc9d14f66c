/*-------------------------------------------------------------------------
 *
 * relabel.c
 *	  kizunasync._upgrade_relabel(): the update from 0.1.0 gives every
 *	  bucket label its canonical form (bucketlabel.h, decisions/0013).
 *
 *	  0.1.0 recorded a bucket value under its rendering's ->> text: a
 *	  number as written (1.0 and 1 apart), a json or jsonb string without
 *	  its quotes (the string "1" and the number 1 together).  A pull now
 *	  asks for canonical labels only, so the update rewrites, for each
 *	  bucketed synced table, the labels of its changelog entries, tombstones
 *	  and bucket grants in place: seqs are kept, so a device's cursor stays
 *	  valid and nothing is delivered twice.  The new label is computed from
 *	  what the bookkeeping holds, never from the table: an entry's or a
 *	  grant's from its old label (kz_label_upgrade), a json-kind tombstone's
 *	  from its bucket snapshot (the rendering itself, so exact).  A grant
 *	  of a json-kind label that could have been a string or another value
 *	  covers both afterwards, as its one label did in 0.1.0.  Nothing
 *	  here runs a type's input or output function, a cast or a domain
 *	  check: the statements run in privileged sections and call built-in
 *	  operators on the bookkeeping only.
 *
 *	  Warnings name what the update cannot mend by itself: a table whose
 *	  history recorded one bucket value under several labels (its devices
 *	  may hold rows the defect stranded: raise its min_schema_version so
 *	  they bootstrap again), a json-kind table whose old labels could not
 *	  tell a string from another kind (repair_table records its rows again
 *	  where the guess was wrong), and a table bucketed by a type sync_table
 *	  no longer accepts.
 *
 *	  Runs inside ALTER EXTENSION ... UPDATE, which the library refuses
 *	  every 0.1.0 entry point and capture trigger until it commits, so no
 *	  write or pull runs beside it.  Called once by the update script,
 *	  which then drops the function.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "bucketlabel.h"
#include "identity.h"
#include "spi.h"

PG_FUNCTION_INFO_V1(kz_upgrade_relabel);

#define RELABEL_CHUNK	1000

/* What relabelling one table found. */
typedef struct Relabel
{
	const char *table;
	KzLabelKind kind;
	bool		merged;			/* two old labels became one */
	bool		ambiguous;		/* an old json-kind label read as JSON */
} Relabel;

static Datum
relabel_text(const char *s)
{
	return CStringGetTextDatum(s);
}

/*
 * Is label already used by an entry, a tombstone or a grant of the table?
 * (A grant shows that devices read the label and were sent rows of it.)
 */
static bool
relabel_label_used(const Relabel *r, const char *label)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	bool		used;

	values[0] = relabel_text(r->table);
	values[1] = relabel_text(label);
	used = kz_spi_priv("SELECT 1 WHERE EXISTS (SELECT 1 FROM kizunasync.changelog"
					   "  WHERE table_name OPERATOR(pg_catalog.=) $1 AND bucket_value OPERATOR(pg_catalog.=) $2)"
					   " OR EXISTS (SELECT 1 FROM kizunasync.tombstones"
					   "  WHERE table_name OPERATOR(pg_catalog.=) $1 AND bucket_value OPERATOR(pg_catalog.=) $2)"
					   " OR EXISTS (SELECT 1 FROM kizunasync.bucket_grants"
					   "  WHERE table_name OPERATOR(pg_catalog.=) $1 AND bucket_value OPERATOR(pg_catalog.=) $2)",
					   2, types, values, NULL, true, 1, SPI_OK_SELECT) > 0;
	SPI_freetuptable(SPI_tuptable);
	return used;
}

/*
 * Move every row of the table labelled old to label new: changelog entries,
 * grants (merged with the user's grant of new), tombstones (of two for one
 * key, the later stays).
 */
static void
relabel_move(Relabel *r, const char *old, const char *new)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];

	if (relabel_label_used(r, new))
		r->merged = true;
	values[0] = relabel_text(r->table);
	values[1] = relabel_text(old);
	values[2] = relabel_text(new);
	kz_spi_priv("UPDATE kizunasync.changelog SET bucket_value = $3"
				" WHERE table_name OPERATOR(pg_catalog.=) $1 AND bucket_value OPERATOR(pg_catalog.=) $2",
				3, types, values, NULL, false, 0, SPI_OK_UPDATE);
	kz_spi_priv("INSERT INTO kizunasync.bucket_grants (user_id, table_name, bucket_value, granted_at)"
				" SELECT user_id, table_name, $3, granted_at FROM kizunasync.bucket_grants"
				" WHERE table_name OPERATOR(pg_catalog.=) $1 AND bucket_value OPERATOR(pg_catalog.=) $2"
				" ON CONFLICT DO NOTHING",
				3, types, values, NULL, false, 0, SPI_OK_INSERT);
	kz_spi_priv("DELETE FROM kizunasync.bucket_grants"
				" WHERE table_name OPERATOR(pg_catalog.=) $1 AND bucket_value OPERATOR(pg_catalog.=) $2",
				2, types, values, NULL, false, 0, SPI_OK_DELETE);
	if (r->kind == KZ_LABEL_JSON)
		return;					/* tombstones: from their snapshots */
	kz_spi_priv("DELETE FROM kizunasync.tombstones t"
				" WHERE t.table_name OPERATOR(pg_catalog.=) $1 AND t.bucket_value OPERATOR(pg_catalog.=) $2"
				" AND EXISTS (SELECT 1 FROM kizunasync.tombstones u"
				"  WHERE u.table_name OPERATOR(pg_catalog.=) $1 AND u.pk OPERATOR(pg_catalog.=) t.pk"
				"  AND u.bucket_value OPERATOR(pg_catalog.=) $3 AND u.seq OPERATOR(pg_catalog.>) t.seq)",
				3, types, values, NULL, false, 0, SPI_OK_DELETE);
	kz_spi_priv("DELETE FROM kizunasync.tombstones u"
				" WHERE u.table_name OPERATOR(pg_catalog.=) $1 AND u.bucket_value OPERATOR(pg_catalog.=) $3"
				" AND EXISTS (SELECT 1 FROM kizunasync.tombstones t"
				"  WHERE t.table_name OPERATOR(pg_catalog.=) $1 AND t.pk OPERATOR(pg_catalog.=) u.pk"
				"  AND t.bucket_value OPERATOR(pg_catalog.=) $2 AND t.seq OPERATOR(pg_catalog.>) u.seq)",
				3, types, values, NULL, false, 0, SPI_OK_DELETE);
	kz_spi_priv("UPDATE kizunasync.tombstones SET bucket_value = $3"
				" WHERE table_name OPERATOR(pg_catalog.=) $1 AND bucket_value OPERATOR(pg_catalog.=) $2",
				3, types, values, NULL, false, 0, SPI_OK_UPDATE);
}

/*
 * A grant of an old label that could not tell a string from another JSON
 * kind also becomes a grant of the string's label: 0.1.0's one label
 * covered both, so the caller keeps exactly what it was entitled to.
 */
static void
relabel_grant_both(Relabel *r, const char *old, const char *as_string)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];

	values[0] = relabel_text(r->table);
	values[1] = relabel_text(old);
	values[2] = relabel_text(as_string);
	kz_spi_priv("INSERT INTO kizunasync.bucket_grants (user_id, table_name, bucket_value, granted_at)"
				" SELECT user_id, table_name, $3, granted_at FROM kizunasync.bucket_grants"
				" WHERE table_name OPERATOR(pg_catalog.=) $1 AND bucket_value OPERATOR(pg_catalog.=) $2"
				" ON CONFLICT DO NOTHING",
				3, types, values, NULL, false, 0, SPI_OK_INSERT);
}

/*
 * Every distinct label of the table (in the changelog, the grants and, for
 * kinds other than json, the tombstones), a chunk at a time in label
 * order; each is moved to its canonical form.  A label moved to one
 * further on is met again and left as it is (canonical labels map to
 * themselves).
 */
#define RELABEL_TOMBSTONES \
	" UNION SELECT bucket_value FROM kizunasync.tombstones WHERE table_name OPERATOR(pg_catalog.=) $1" \
	"  AND bucket_value OPERATOR(pg_catalog.<>) ''"
#define RELABEL_LABELS(tombstones) \
	"SELECT l FROM (" \
	" SELECT bucket_value FROM kizunasync.changelog WHERE table_name OPERATOR(pg_catalog.=) $1" \
	" UNION SELECT bucket_value FROM kizunasync.bucket_grants WHERE table_name OPERATOR(pg_catalog.=) $1" \
	tombstones ") AS s (l) WHERE l IS NOT NULL"

/*
 * Every distinct label of the table (in the changelog, the grants and, for
 * kinds other than json, the tombstones) as the update found them: a
 * cursor keeps the snapshot it was opened with, so the labels written
 * meanwhile are not met again.  Each is moved to its canonical form.
 */
static void
relabel_labels(Relabel *r, MemoryContext cxt)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	KzUserSwitch sw;
	Portal		portal;

	values[0] = relabel_text(r->table);
	kz_priv_begin(&sw);
	portal = SPI_cursor_open_with_args(NULL, r->kind == KZ_LABEL_JSON ? RELABEL_LABELS("")
									   : RELABEL_LABELS(RELABEL_TOMBSTONES),
									   1, types, values, NULL, false, 0);
	kz_priv_end(&sw);
	for (;;)
	{
		uint64		n,
					i;
		SPITupleTable *tt;

		kz_priv_begin(&sw);
		SPI_cursor_fetch(portal, true, RELABEL_CHUNK);
		kz_priv_end(&sw);
		n = SPI_processed;
		tt = SPI_tuptable;
		for (i = 0; i < n; i++)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);
			char	   *label = SPI_getvalue(tt->vals[i], tt->tupdesc, 1);
			char	   *as_string;
			char	   *canon = kz_label_upgrade(label, r->kind, &as_string);

			if (as_string != NULL)
			{
				r->ambiguous = true;
				relabel_grant_both(r, label, as_string);
			}
			if (strcmp(canon, label) != 0)
				relabel_move(r, label, canon);
			MemoryContextSwitchTo(old);
			MemoryContextReset(cxt);
		}
		SPI_freetuptable(tt);
		if (n == 0)
			break;
	}
	kz_priv_begin(&sw);
	SPI_cursor_close(portal);
	kz_priv_end(&sw);
}

/*
 * The tombstones of a json-kind table, one at a time in seq order: the
 * label of the bucket value their snapshot holds.  Of two tombstones for
 * one key and label, the later stays.
 */
static void
relabel_json_tombstones(Relabel *r, const char *column, MemoryContext cxt)
{
	int64		after = 0;

	for (;;)
	{
		Oid			types[5] = {TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID};
		Datum		values[5];
		uint64		n,
					i;
		SPITupleTable *tt;

		values[0] = relabel_text(r->table);
		values[1] = relabel_text(column);
		values[2] = Int64GetDatum(after);
		n = kz_spi_priv("SELECT seq, pk, bucket_value, bucket_snapshot OPERATOR(pg_catalog.->) $2"
						" FROM kizunasync.tombstones WHERE table_name OPERATOR(pg_catalog.=) $1"
						" AND seq OPERATOR(pg_catalog.>) $3 ORDER BY seq LIMIT " CppAsString2(RELABEL_CHUNK),
						3, types, values, NULL, true, 0, SPI_OK_SELECT);
		tt = SPI_tuptable;
		for (i = 0; i < n; i++)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);
			bool		isnull;
			int64		seq = DatumGetInt64(SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull));
			char	   *pk = SPI_getvalue(tt->vals[i], tt->tupdesc, 2);
			char	   *label = SPI_getvalue(tt->vals[i], tt->tupdesc, 3);
			Datum		snap = SPI_getbinval(tt->vals[i], tt->tupdesc, 4, &isnull);
			char	   *canon = isnull ? NULL : kz_label_of(DatumGetJsonbP(snap), r->kind);

			after = seq;
			if (canon != NULL && strcmp(canon, label) != 0)
			{
				if (relabel_label_used(r, canon))
					r->merged = true;
				values[1] = relabel_text(pk);
				values[2] = Int64GetDatum(seq);
				values[3] = relabel_text(canon);
				values[4] = relabel_text(label);
				kz_spi_priv("DELETE FROM kizunasync.tombstones WHERE table_name OPERATOR(pg_catalog.=) $1"
							" AND pk OPERATOR(pg_catalog.=) $2 AND bucket_value OPERATOR(pg_catalog.=) $4"
							" AND seq OPERATOR(pg_catalog.<) $3",
							4, types, values, NULL, false, 0, SPI_OK_DELETE);
				if (kz_spi_priv("UPDATE kizunasync.tombstones SET bucket_value = $4"
								" WHERE seq OPERATOR(pg_catalog.=) $3 AND NOT EXISTS (SELECT 1 FROM kizunasync.tombstones u"
								"  WHERE u.table_name OPERATOR(pg_catalog.=) $1 AND u.pk OPERATOR(pg_catalog.=) $2"
								"  AND u.bucket_value OPERATOR(pg_catalog.=) $4)",
								4, types, values, NULL, false, 0, SPI_OK_UPDATE) == 0)
					kz_spi_priv("DELETE FROM kizunasync.tombstones WHERE seq OPERATOR(pg_catalog.=) $3"
								" AND bucket_value OPERATOR(pg_catalog.=) $5",
								5, types, values, NULL, false, 0, SPI_OK_DELETE);
			}
			MemoryContextSwitchTo(old);
			MemoryContextReset(cxt);
		}
		SPI_freetuptable(tt);
		if (n < RELABEL_CHUNK)
			break;
	}
}

static void
relabel_table(const char *table, Oid relid, const char *column, MemoryContext cxt)
{
	AttrNumber	attnum = get_attnum(relid, column);
	Oid			typid;
	Oid			culprit;
	const char *why;
	Relabel		r;

	if (attnum == InvalidAttrNumber)
		return;					/* its bucket column is gone: nothing can be pulled */
	typid = get_atttype(relid, attnum);
	culprit = kz_label_refused_type(typid, &why);
	if (OidIsValid(culprit))
		ereport(WARNING,
				(errmsg("synced table \"%s\" is bucketed by column \"%s\" of type %s, which sync_table no longer accepts",
						table, column, format_type_be(typid)),
				 errdetail("Values of type %s render according to %s: one bucket value can be recorded under one label and asked for under another.",
						   format_type_be(culprit), why),
				 errhint("The table keeps syncing; choose another bucket column with kizunasync.sync_table() (which records every row again).")));
	memset(&r, 0, sizeof(r));
	r.table = table;
	r.kind = kz_label_kind(typid);
	if (r.kind == KZ_LABEL_STRING || r.kind == KZ_LABEL_BOOL)
		return;					/* such labels were canonical already */
	relabel_labels(&r, cxt);
	if (r.kind == KZ_LABEL_JSON)
		relabel_json_tombstones(&r, column, cxt);
	if (r.merged)
		ereport(WARNING,
				(errmsg("synced table \"%s\" recorded one bucket value under more than one label", table),
				 errdetail("Before this update, a bucket value written in two forms (such as 1 and 1.0) was two buckets, so a device may still hold rows whose later changes or deletion it was never sent."),
				 errhint("Raise the table's min_schema_version with kizunasync.sync_table() so that its clients bootstrap again.")));
	if (r.ambiguous)
		ereport(WARNING,
				(errmsg("some bucket labels of synced table \"%s\" could not tell a string from another JSON value", table),
				 errdetail("The update read such a label as JSON (a bucket grant of it covers the string too); a row whose bucket value is a string that reads as JSON, such as \"1\", keeps a wrong label until it is written again."),
				 errhint("Run kizunasync.repair_table() on the table to record those rows again.")));
}

/* kizunasync._upgrade_relabel() RETURNS bigint: the tables relabelled. */
Datum
kz_upgrade_relabel(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "kizunasync relabel",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext callcxt = CurrentMemoryContext;
	uint64		n,
				i;
	char	  **tables;
	char	  **columns;
	Oid		   *relids;

	kz_spi_connect();
	n = kz_spi_priv("SELECT table_name, relid::pg_catalog.oid, bucket_column FROM kizunasync.synced_tables"
					" WHERE bucket_column IS NOT NULL ORDER BY table_name",
					0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
	tables = MemoryContextAlloc(callcxt, sizeof(char *) * Max(n, 1));
	columns = MemoryContextAlloc(callcxt, sizeof(char *) * Max(n, 1));
	relids = MemoryContextAlloc(callcxt, sizeof(Oid) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		tables[i] = MemoryContextStrdup(callcxt, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
		relids[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
		columns[i] = MemoryContextStrdup(callcxt, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3));
	}
	SPI_freetuptable(SPI_tuptable);
	for (i = 0; i < n; i++)
		relabel_table(tables[i], relids[i], columns[i], cxt);
	kz_spi_finish();
	MemoryContextDelete(cxt);
	PG_RETURN_INT64((int64) n);
}
