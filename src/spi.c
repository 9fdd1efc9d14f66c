/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  SPI helpers and the backend-lifetime plan cache (spi.h).
 *
 *	  The cache is keyed by the role the statement runs as and a hash of its
 *	  text; the text is compared on a hit, so a hash collision only costs a
 *	  re-prepare.  Statement texts depend on the column sets clients send,
 *	  so the cache is bounded (KZ_PLAN_CACHE_SIZE) with least-recently-used
 *	  eviction.  A plan used by the current transaction is never evicted:
 *	  callers hold plan pointers for the length of a call.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "identity.h"
#include "pgcompat.h"
#include "spi.h"

typedef struct KzPlanKey
{
	Oid			role;
	uint32		hash;
} KzPlanKey;

typedef struct KzPlanEntry
{
	KzPlanKey	key;
	char	   *sql;			/* in TopMemoryContext */
	SPIPlanPtr	plan;
	LocalTransactionId used_lxid;	/* last transaction that used it */
	dlist_node	lru;			/* head: most recently used */
} KzPlanEntry;

static HTAB *plan_cache = NULL;
static SPIPlanPtr spi_plan_lookup(const char *sql, int nargs, const Oid *argtypes);
static dlist_head plan_lru = DLIST_STATIC_INIT(plan_lru);

void
kz_spi_connect(void)
{
	int			rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
}

void
kz_spi_finish(void)
{
	int			rc = SPI_finish();

	if (rc != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));
}

static SPIPlanPtr
spi_prepare_or_fail(const char *sql, int nargs, const Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, (Oid *) argtypes);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed (%s) on: %s",
			 SPI_result_code_string(SPI_result), sql);
	return plan;
}

static void
spi_evict(KzPlanEntry *e)
{
	dlist_delete(&e->lru);
	SPI_freeplan(e->plan);
	pfree(e->sql);
	hash_search(plan_cache, &e->key, HASH_REMOVE, NULL);
}

/* Make room for one more entry; false when every entry is in use. */
static bool
spi_make_room(void)
{
	dlist_iter	it;

	if (hash_get_num_entries(plan_cache) < KZ_PLAN_CACHE_SIZE)
		return true;
	dlist_reverse_foreach(it, &plan_lru)
	{
		KzPlanEntry *e = dlist_container(KzPlanEntry, lru, it.cur);

		if (e->used_lxid != kz_my_lxid())
		{
			spi_evict(e);
			return true;
		}
	}
	return false;
}

SPIPlanPtr
kz_plan(const char *sql, int nargs, const Oid *argtypes)
{
	MemoryContext cxt = CurrentMemoryContext;
	SPIPlanPtr	plan = spi_plan_lookup(sql, nargs, argtypes);

	MemoryContextSwitchTo(cxt);
	return plan;
}

static SPIPlanPtr
spi_plan_lookup(const char *sql, int nargs, const Oid *argtypes)
{
	KzPlanKey	key;
	KzPlanEntry *e;
	bool		found;
	SPIPlanPtr	plan;

	if (plan_cache == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(KzPlanKey);
		ctl.entrysize = sizeof(KzPlanEntry);
		plan_cache = hash_create("kizunasync plans", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	memset(&key, 0, sizeof(key));
	key.role = GetUserId();
	key.hash = hash_bytes((const unsigned char *) sql, strlen(sql));

	e = hash_search(plan_cache, &key, HASH_FIND, NULL);
	if (e != NULL && strcmp(e->sql, sql) == 0)
	{
		e->used_lxid = kz_my_lxid();
		dlist_move_head(&plan_lru, &e->lru);
		return e->plan;
	}
	if (e != NULL)
	{
		/* a hash collision: the newer statement takes the slot if it may */
		if (e->used_lxid == kz_my_lxid())
			return spi_prepare_or_fail(sql, nargs, argtypes);
		spi_evict(e);
	}
	if (!spi_make_room())
		return spi_prepare_or_fail(sql, nargs, argtypes);	/* this call only */

	plan = spi_prepare_or_fail(sql, nargs, argtypes);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	e = hash_search(plan_cache, &key, HASH_ENTER, &found);
	Assert(!found);
	e->sql = MemoryContextStrdup(TopMemoryContext, sql);
	e->plan = plan;
	e->used_lxid = kz_my_lxid();
	dlist_push_head(&plan_lru, &e->lru);
	return plan;
}

uint64
kz_spi_priv_snapshot(const char *sql, int nargs, const Oid *argtypes, Datum *values,
					 const char *nulls, Snapshot snap, long count, int expect)
{
	MemoryContext cxt = CurrentMemoryContext;
	KzUserSwitch s;
	int			rc;

	kz_priv_begin(&s);
	rc = SPI_execute_snapshot(kz_plan(sql, nargs, argtypes), values, nulls, snap,
							  InvalidSnapshot, false, false, count);
	MemoryContextSwitchTo(cxt);
	kz_priv_end(&s);
	if (rc != expect)
		elog(ERROR, "unexpected SPI result %s on: %s", SPI_result_code_string(rc), sql);
	return SPI_processed;
}

int
kz_plan_cache_count(void)
{
	return plan_cache ? (int) hash_get_num_entries(plan_cache) : 0;
}

uint64
kz_spi_run(const char *sql, int nargs, const Oid *argtypes, Datum *values,
		   const char *nulls, bool read_only, long count, int expect)
{
	MemoryContext cxt = CurrentMemoryContext;
	int			rc = SPI_execute_plan(kz_plan(sql, nargs, argtypes), values, nulls,
									  read_only, count);

	/* SPI leaves its procedure context current: go back to the caller's */
	MemoryContextSwitchTo(cxt);
	if (rc != expect)
		elog(ERROR, "unexpected SPI result %s on: %s", SPI_result_code_string(rc), sql);
	return SPI_processed;
}

uint64
kz_spi_priv(const char *sql, int nargs, const Oid *argtypes, Datum *values,
			const char *nulls, bool read_only, long count, int expect)
{
	KzUserSwitch s;
	uint64		n;

	kz_priv_begin(&s);
	n = kz_spi_run(sql, nargs, argtypes, values, nulls, read_only, count, expect);
	kz_priv_end(&s);
	return n;
}
