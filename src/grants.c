/*-------------------------------------------------------------------------
 *
 * grants.c
 *	  Bucket grants (grants.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "errors.h"
#include "grants.h"
#include "spi.h"

bool
kz_grants_held(const char *sub, const char *table_name, const char *bucket_value)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[3];
	uint64		n;

	vals[0] = CStringGetTextDatum(sub);
	vals[1] = CStringGetTextDatum(table_name);
	vals[2] = CStringGetTextDatum(bucket_value);
	n = kz_spi_priv("SELECT 1 FROM kizunasync.bucket_grants"
					" WHERE user_id OPERATOR(pg_catalog.=) $1"
					" AND table_name OPERATOR(pg_catalog.=) $2"
					" AND bucket_value OPERATOR(pg_catalog.=) $3",
					3, types, vals, NULL, true, 1, SPI_OK_SELECT);
	SPI_freetuptable(SPI_tuptable);
	return n > 0;
}

/* A text[] of strs[0 .. n-1]. */
static ArrayType *
grants_text_array(const char **strs, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(strs[i]);
	return construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT);
}

void
kz_grants_held_many(const char *sub, const char **tables, const char **values, int n,
					bool *held)
{
	Oid			types[3] = {TEXTOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		vals[3];
	uint64		got;
	uint64		i;

	memset(held, 0, sizeof(bool) * n);
	if (n <= 0)
		return;
	vals[0] = CStringGetTextDatum(sub);
	vals[1] = PointerGetDatum(grants_text_array(tables, n));
	vals[2] = PointerGetDatum(grants_text_array(values, n));
	got = kz_spi_priv("SELECT u.i FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3))"
					  " WITH ORDINALITY AS u(t, v, i)"
					  " WHERE EXISTS (SELECT 1 FROM kizunasync.bucket_grants g"
					  "   WHERE g.user_id OPERATOR(pg_catalog.=) $1"
					  "   AND g.table_name OPERATOR(pg_catalog.=) u.t"
					  "   AND g.bucket_value OPERATOR(pg_catalog.=) u.v)",
					  3, types, vals, NULL, true, 0, SPI_OK_SELECT);
	for (i = 0; i < got; i++)
	{
		bool		isnull;
		int64		k = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc, 1, &isnull));

		if (!isnull && k >= 1 && k <= n)
			held[k - 1] = true;
	}
	SPI_freetuptable(SPI_tuptable);
}

typedef struct GrantPair
{
	const char *table;
	const char *value;
} GrantPair;

static int
grants_cmp(const void *a, const void *b)
{
	const GrantPair *x = a;
	const GrantPair *y = b;
	int			c = strcmp(x->table, y->table);

	return c != 0 ? c : strcmp(x->value, y->value);
}

void
kz_grants_record(const char *sub, const char **tables, const char **values, int n)
{
	GrantPair  *pairs;
	int			i;

	if (n <= 0)
		return;
	kz_require_read_write("bucket grants");
	pairs = palloc(sizeof(GrantPair) * n);
	for (i = 0; i < n; i++)
	{
		pairs[i].table = tables[i];
		pairs[i].value = values[i];
	}
	qsort(pairs, n, sizeof(GrantPair), grants_cmp);
	for (i = 0; i < n; i++)
	{
		Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
		Datum		args[3];

		if (i > 0 && grants_cmp(&pairs[i - 1], &pairs[i]) == 0)
			continue;
		args[0] = CStringGetTextDatum(sub);
		args[1] = CStringGetTextDatum(pairs[i].table);
		args[2] = CStringGetTextDatum(pairs[i].value);
		kz_spi_priv("INSERT INTO kizunasync.bucket_grants (user_id, table_name, bucket_value)"
					" VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
					3, types, args, NULL, false, 0, SPI_OK_INSERT);
	}
	pfree(pairs);
}
