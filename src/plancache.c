/*-------------------------------------------------------------------------
 *
 * plancache.c
 *	  Backend-lifetime SPI plan cache shared by pull and push.
 *
 *	  Keyed by the role the statement runs as and a hash of its text: the
 *	  rendering and writing statements run as the caller, and a plan whose
 *	  query depends on row security would otherwise be re-planned every time
 *	  the role changes.  The text is compared on a hit, so a hash collision
 *	  only costs a re-prepare.  At most KZ_PLAN_CACHE_MAX plans are kept (the
 *	  statement texts depend on the column sets clients send).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "plancache.h"

#define KZ_PLAN_CACHE_MAX 2000

typedef struct PlanKey
{
	Oid			role;
	uint32		hash;
} PlanKey;

typedef struct PlanEntry
{
	PlanKey		key;
	char	   *sql;			/* in TopMemoryContext */
	SPIPlanPtr	plan;
} PlanEntry;

static HTAB *plan_cache = NULL;

static SPIPlanPtr
prepare_or_fail(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "kizunasync: SPI_prepare failed (%s) on: %s",
			 SPI_result_code_string(SPI_result), sql);
	return plan;
}

SPIPlanPtr
kz_plan_cached(const char *sql, int nargs, Oid *argtypes)
{
	PlanKey		key;
	PlanEntry  *e;
	bool		found;
	SPIPlanPtr	plan;

	if (plan_cache == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(PlanKey);
		ctl.entrysize = sizeof(PlanEntry);
		plan_cache = hash_create("kizunasync plans", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	memset(&key, 0, sizeof(key));
	key.role = GetUserId();
	key.hash = hash_bytes((const unsigned char *) sql, strlen(sql));

	e = hash_search(plan_cache, &key, HASH_FIND, NULL);
	if (e != NULL && strcmp(e->sql, sql) == 0)
		return e->plan;
	if (e == NULL && hash_get_num_entries(plan_cache) >= KZ_PLAN_CACHE_MAX)
		return prepare_or_fail(sql, nargs, argtypes);	/* this call only */

	plan = prepare_or_fail(sql, nargs, argtypes);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "kizunasync: SPI_keepplan failed");
	e = hash_search(plan_cache, &key, HASH_ENTER, &found);
	if (found)
	{
		/* a hash collision: the newer statement takes the slot */
		SPI_freeplan(e->plan);
		pfree(e->sql);
	}
	e->sql = MemoryContextStrdup(TopMemoryContext, sql);
	e->plan = plan;
	return plan;
}
