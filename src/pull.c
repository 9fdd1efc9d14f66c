/*-------------------------------------------------------------------------
 *
 * pull.c
 *	  kizunasync.pull(buckets jsonb, cursor text, schema_version integer,
 *	                  "limit" integer DEFAULT 500, client_id uuid DEFAULT NULL)
 *	  RETURNS jsonb
 *
 *	  One call: validate the request (the gates of SPEC 4.3, pull_gates.c),
 *	  take one snapshot, walk the candidate stream (pull_stream.c) in
 *	  batches of what the page still needs, render rows as the caller,
 *	  settle the cursor (horizon.c), record grants and the client registry,
 *	  and return the page (pull_page.c).  A pull that could make no
 *	  progress because changes are in flight waits a bounded time for them
 *	  and tries again (decisions/0083).
 *
 *	  The common page writes nothing, so a pull runs in a READ ONLY
 *	  transaction and on a hot standby; a page that needs a write it cannot
 *	  make there (a first grant, a registered client's bootstrap) or a
 *	  standby that cannot answer it (behind the cursor, a grant it may not
 *	  have replayed) is refused with KZL03, retry on the primary
 *	  (decisions/0085).
 *
 *	  Runs as the caller (SECURITY INVOKER); bookkeeping is read in
 *	  privileged sections (decisions/0060).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "errors.h"
#include "capture.h"
#include "cursor.h"
#include "grants.h"
#include "horizon.h"
#include "identity.h"
#include "journal.h"
#include "jsonbutil.h"
#include "pull_gates.h"
#include "pull_page.h"
#include "pull_merge.h"
#include "pull_stream.h"
#include "registry.h"
#include "request_pull.h"
#include "retention.h"
#include "settings.h"
#include "spi.h"
#include "stamp.h"

PG_FUNCTION_INFO_V1(kz_pull);

#define PULL_DEFAULT_LIMIT	500
#define PULL_FNAME			"kizunasync.pull()"

/* Everything a call knows once the request passed its gates. */
typedef struct PullCall
{
	KzCaller	caller;
	KzCursor   *cur;
	text	   *cursor_in;
	int64		start_e;		/* the transfer's start checkpoint */
	int32		schema_version;
	int32		limit;
	KzSettings	settings;
	char	   *sub;
	pg_uuid_t  *client;			/* client_id, else the JWT session id, else NULL */
	bool		register_any;
	KzPullRequest req;
	KzPullTables pt;
} PullCall;

/* One attempt at a page, from one snapshot. */
typedef struct PullPage
{
	KzPageEntry *rows;
	int			nrows;
	KzPageEntry *tombs;
	int			ntombs;
	const char **row_grants;	/* bucket value of each delivered row whose grant
								 * is not held yet, else NULL */
	bool	   *row_journaled;	/* its table has the conflict journal */
	text	   *cursor_out;
	bool		has_more;
	const char *signal;			/* CHECKPOINT_EXPIRED, or NULL */
	int64		claimed_hw;		/* high-water (or position) the cursor claims */
	int64		reaped_seq;		/* the reap horizon the attempt saw */
	int64		drawn;			/* the sequence's last value the attempt saw */
	bool		behind;			/* a standby that has not replayed the cursor */
	bool		progress;
	const KzPullSource *hidden_ungranted;	/* a withheld change of a pair
											 * without a grant (standby check) */
	int64	   *own;			/* seqs of candidates whose row this transaction wrote */
	int			nown;
} PullPage;

/* ------------------------------------------------------------ the request */

/*
 * Steps 1-9 of SPEC 4.3.  Returns false when the answer is RESET_REQUIRED.
 */
static bool
pull_gates(FunctionCallInfo fcinfo, PullCall *pc)
{
	bool		sv_null = PG_ARGISNULL(2);
	pg_uuid_t	sid;
	int			minver = 0;
	bool		have_minver;

	/* 1. session id claim (a non-uuid is 22P02), and the caller's user id */
	if (kz_jwt_session_id(&sid))
	{
		pc->client = palloc(sizeof(pg_uuid_t));
		memcpy(pc->client, &sid, sizeof(pg_uuid_t));
	}
	if (!PG_ARGISNULL(4))
		pc->client = PG_GETARG_UUID_P(4);
	pc->sub = kz_jwt_sub();

	/* 2. cursor */
	pc->cur = palloc(sizeof(KzCursor));
	kz_cursor_from_datum(PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1),
						 PG_ARGISNULL(1), pc->cur);
	pc->cursor_in = PG_GETARG_TEXT_PP(1);
	pc->start_e = pc->cur->has_start ? pc->cur->start : pc->cur->high_water;
	pc->schema_version = sv_null ? 0 : PG_GETARG_INT32(2);

	/* 3. limit */
	kz_settings_read(&pc->settings);
	pc->limit = PG_ARGISNULL(3) ? PULL_DEFAULT_LIMIT : PG_GETARG_INT32(3);
	if (pc->limit < 1 || pc->limit > pc->settings.max_pull_limit)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("limit must be between 1 and %d", pc->settings.max_pull_limit),
				 errdetail("The request asked for %d.", pc->limit),
				 errhint("The maximum is the max_pull_limit setting (kizunasync.configure()).")));

	/* 4. buckets; 5. tables must be synced; 6. params must be columns */
	kz_pull_parse_buckets(fcinfo, pc->settings.max_pull_buckets, &pc->req);
	kz_pull_resolve(&pc->req, pc->caller.role, &pc->pt);

	/* 7. RESET_REQUIRED */
	have_minver = kz_pull_min_schema_version(&pc->pt, &minver, &pc->register_any);
	if (sv_null || (have_minver && pc->schema_version < minver))
		return false;

	/* 8. KZL01; 9. KZL02 */
	kz_pull_check_scopes(&pc->req, &pc->pt, pc->caller.role);
	return true;
}

/* ------------------------------------------------------------ the horizon */

/*
 * Is the incoming cursor one this database's history cannot honour?  It
 * is expired when a reap passed a seq it still owes (its start, or a hole),
 * when it is from another incarnation of the extension (below the first
 * seq of this one, or above anything ever drawn), or when it is a paused
 * bootstrap of a registered client that a reap overtook.
 */
static bool
pull_cursor_ahead(const KzCursor *cur, int64 drawn)
{
	return cur->high_water > drawn || (cur->has_start && cur->start > drawn);
}

static bool
pull_cursor_expired(PullCall *pc, const KzReapState *rs, int64 drawn)
{
	KzCursor   *cur = pc->cur;

	if ((pc->start_e > 0 && pc->start_e < rs->reaped_seq) ||
		(cur->nholes > 0 && cur->holes[0] < rs->reaped_seq))
		return true;
	if (pull_cursor_ahead(cur, drawn))
		return true;
	if (rs->have_first_seq && cur->high_water > 0 &&
		(cur->high_water < rs->first_seq ||
		 (cur->has_start && cur->start > 0 && cur->start < rs->first_seq) ||
		 (cur->nholes > 0 && cur->holes[0] < rs->first_seq)))
		return true;
	if (cur->has_start && cur->start == 0 && cur->high_water > 0 &&
		rs->reaped_seq > cur->high_water && pc->register_any && pc->client != NULL &&
		pc->sub != NULL)
	{
		int64		horizon;

		/*
		 * A paused bootstrap: a row it delivered may have been deleted since
		 * and the tombstone reaped.  Such a tombstone has a seq above P
		 * (so nothing is lost while the horizon is at or below P), and it
		 * was reaped after the bootstrap began: the registry keeps the reap
		 * horizon of that beginning (decisions/0010).  A client the
		 * registry knows no bootstrap of is expired too.
		 */
		if (!kz_registry_bootstrap_horizon(pc->sub, pc->client, &horizon) ||
			horizon < rs->reaped_seq)
			return true;
	}
	return false;
}

static text *
pull_encode_cursor(bool has_start, int64 start, const KzHorizon *hz)
{
	KzCursor   *c = palloc0(sizeof(KzCursor));
	int			i;

	c->has_start = has_start;
	c->start = start;
	c->high_water = hz->high_water;
	for (i = 0; i < hz->nholes; i++)
		c->holes[c->nholes++] = hz->holes[i];
	return kz_cursor_to_text(c);
}

/* ------------------------------------------------------------ KZL03 */

static void pull_needs_primary(const char *msg, const char *detail) pg_attribute_noreturn();

/* Refuse a pull that only the primary can answer (decisions/0085). */
static void
pull_needs_primary(const char *msg, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_KZ_PULL_NEEDS_PRIMARY),
			 errmsg("%s", msg),
			 errdetail("%s", detail),
			 errhint("Retry the same request on the primary in a read-write transaction "
					 "(through the Data API: POST, not GET).")));
}

/* A read-only transaction, or any transaction of a hot standby. */
static bool
pull_read_only(void)
{
	return XactReadOnly || RecoveryInProgress();
}

static char *
pull_quote(const char *s)
{
	return kz_quote_for_message(s, strlen(s), false);
}

/*
 * On a standby, a pair without a grant (as far as the standby has
 * replayed) whose tombstones lie in the page's range, or a change of which
 * the page withheld (hidden: its row is out of the caller's sight): the
 * primary may hold a grant the standby has not replayed yet, and then the
 * page would carry them (decisions/0024, "Visibility").
 */
static void
pull_standby_grant_check(KzPullStream *s, int64 lo, int64 hi, const int64 *holes,
						 int nholes, const KzPullSource *hidden)
{
	const KzPullSource *src = kz_stream_ungranted_tombstones(s, lo, hi, holes, nholes);

	if (src == NULL && hidden != NULL)
		pull_needs_primary("a standby cannot answer this pull",
						   psprintf("A change in table %s, bucket value %s, lies in the page's range, "
									"the caller may not see its row, and this standby holds no grant "
									"of the caller for that bucket value: it cannot tell a grant it has "
									"not replayed yet (the change would be a deletion for the caller) "
									"from none.",
									pull_quote(hidden->table->conf->table_name),
									pull_quote(hidden->label)));
	if (src != NULL)
		pull_needs_primary("a standby cannot answer this pull",
						   psprintf("Deletions in table %s, bucket value %s, lie in the page's range, "
									"and this standby holds no grant of the caller for that bucket "
									"value: it cannot tell a grant it has not replayed yet from none.",
									pull_quote(src->table->conf->table_name),
									pull_quote(src->label)));
}

/* ------------------------------------------------------------ one attempt */

/*
 * Walk the stream into the page.  Returns the page position: the last
 * entry of a page that ends early, the last candidate examined when the
 * scan cap ended it, or 0 when the stream ran out (a final page).
 */
static int64
pull_walk(PullCall *pc, KzPullStream *s, PullPage *pg, bool *capped, bool *more)
{
	KzCandidate *batch = palloc(sizeof(KzCandidate) * ((Size) pc->limit + 1));
	int			scanned = 0;
	int			entries = 0;
	int64		last_scanned = 0;
	int64		last_seq = 0;
	TimestampTz gone_at = GetCurrentTransactionStartTimestamp();
	int			i;

	*capped = *more = false;
	pg->own = palloc(sizeof(int64) * ((Size) pc->settings.max_pull_scan + 1));
	while (!*capped && !*more)
	{
		int			need = (int) Min((int64) pc->limit + 1 - entries,
									 (int64) pc->settings.max_pull_scan - scanned + 1);
		int			n = kz_stream_next(s, batch, need);

		if (n == 0)
			break;
		kz_stream_mark_own_keys(&pc->pt, batch, n);
		kz_stream_render(&pc->pt, batch, n);
		for (i = 0; i < n; i++)
		{
			KzCandidate *c = &batch[i];
			KzPageEntry *e;
			bool		in_scope;
			bool		tomb = c->tomb;

			if (scanned >= pc->settings.max_pull_scan)
			{
				*capped = true;
				break;
			}
			scanned++;
			last_scanned = c->seq;
			if (c->own)
				continue;		/* ours: a hole until we commit */
			if (c->own_key)
			{
				/* our row: what we see of it may never commit */
				pg->own[pg->nown++] = c->seq;
				continue;
			}
			in_scope = kz_stream_in_scope(s, &pc->pt, c);
			if (tomb ? in_scope : !in_scope)
			{
				if (tomb || !c->src->granted)
				{
					/* withheld */
					if (!tomb && pg->hidden_ungranted == NULL)
						pg->hidden_ungranted = c->src;
					continue;
				}

				/*
				 * A change of the pair the caller holds the grant of, to a
				 * row it may no longer see: a tombstone for this caller, as
				 * of this pull (decisions/0024, "Visibility").
				 */
				tomb = true;
			}
			if (++entries > pc->limit)
			{
				*more = true;
				break;
			}
			last_seq = c->seq;
			e = tomb ? &pg->tombs[pg->ntombs++] : &pg->rows[pg->nrows];
			e->seq = c->seq;
			e->table_name = c->src->table->conf->table_name;
			e->pk = c->pk;
			e->row = tomb ? NULL : c->row;
			e->deleted_at = c->tomb ? c->deleted_at : gone_at;
			if (!tomb)
			{
				pg->row_grants[pg->nrows] = c->src->granted ? NULL : c->src->label;
				pg->row_journaled[pg->nrows] = c->src->table->conf->conflict_journal;
				pg->nrows++;
			}
		}
	}
	if (*capped)
		return last_scanned;
	if (*more)
		return last_seq;
	return 0;
}

/* Drop the page's entries above hw (the cursor was lowered below them). */
static void
pull_trim(PullPage *pg, int64 hw)
{
	while (pg->nrows > 0 && pg->rows[pg->nrows - 1].seq > hw)
		pg->nrows--;
	while (pg->ntombs > 0 && pg->tombs[pg->ntombs - 1].seq > hw)
		pg->ntombs--;
}

static void
pull_attempt(PullCall *pc, Snapshot snap, PullPage *pg)
{
	KzCursor   *cur = pc->cur;
	KzReapState rs;
	int64		L;
	int64	   *pending;
	int			npending;
	int64	   *gone;
	int			ngone = 0;
	KzPullStream s;
	KzBucketPair *pairs;
	int			npairs;
	bool		capped,
				more;
	int64		pos;
	KzHorizon	hz;
	int			i;

	memset(pg, 0, sizeof(*pg));
	pg->rows = palloc(sizeof(KzPageEntry) * pc->limit);
	pg->tombs = palloc(sizeof(KzPageEntry) * pc->limit);
	pg->row_grants = palloc(sizeof(char *) * pc->limit);
	pg->row_journaled = palloc(sizeof(bool) * pc->limit);

	/*
	 * 10. CHECKPOINT_EXPIRED, against the reap state of the pull snapshot.
	 * A cursor above everything a standby has replayed may come from the
	 * primary (the standby lags) or from elsewhere: only the primary can
	 * tell, so a standby waits for replay and then refuses (KZL03).
	 */
	kz_reap_state_read(&rs);
	pg->reaped_seq = rs.reaped_seq;
	L = kz_horizon_high_water(&pg->drawn);
	if (RecoveryInProgress() && pull_cursor_ahead(cur, pg->drawn))
	{
		pg->behind = true;
		return;
	}
	if (pull_cursor_expired(pc, &rs, pg->drawn))
	{
		pg->signal = "CHECKPOINT_EXPIRED";
		pg->progress = true;
		return;
	}

	/*
	 * 12. The page is built from the snapshot with candidates bounded by L
	 * (nothing above the final high-water is visible in snap); then only
	 * the range the cursor claims is classified, among the requested
	 * buckets (decisions/0010).
	 */
	npending = kz_horizon_recheck(cur->holes, cur->nholes, cur->high_water, L, snap, &pending);
	kz_stream_init(&s, &pc->pt, pc->sub, snap, cur->high_water, Max(L, cur->high_water));
	gone = palloc(sizeof(int64) * Max(cur->nholes, 1));
	for (i = 0; i < cur->nholes; i++)
	{
		bool		still = false;
		int			j;

		for (j = 0; j < npending && !still; j++)
			still = (pending[j] == cur->holes[i]);
		if (!still)
			gone[ngone++] = cur->holes[i];
	}
	kz_stream_add_holes(&s, gone, ngone);

	pos = pull_walk(pc, &s, pg, &capped, &more);
	if (!capped && !more)
	{
		/*
		 * A final page claims at least the reap horizon.  Once VACUUM
		 * removed the reaped tombstones, the highest entry left can lie
		 * below it (a quiet database whose newest entry was reaped), and
		 * a bootstrap's cursor would be expired at its next pull, again
		 * and again.  Every seq below the horizon was drawn by a section
		 * that ended before the reaped tombstone was seen, so the seqs up
		 * to it are classified like any others (pending ones of the
		 * requested pairs are holes).
		 */
		pos = Max(kz_horizon_highest_visible(cur->high_water, L, snap), rs.reaped_seq);
	}
	if (RecoveryInProgress() && pc->sub != NULL)
		pull_standby_grant_check(&s, cur->high_water, Max(L, cur->high_water), gone, ngone,
								 pg->hidden_ungranted);
	kz_stream_end(&s);
	npairs = kz_stream_pairs(&s, &pairs);
	kz_horizon_settle(cur->high_water, pos, pending, npending, pg->own, pg->nown,
					  rs.reaped_seq, pairs, npairs, kz_stream_read_by_seq(&s), snap, KZ_CURSOR_MAX_HOLES, &hz);
	if (rs.have_first_seq && hz.high_water > cur->high_water && hz.high_water < rs.first_seq)
	{
		/*
		 * Lowered below this incarnation's first seq (its first entries are
		 * holes): nothing lies between there and the incoming high-water,
		 * and a cursor below the first seq would read as another
		 * incarnation's.
		 */
		hz.high_water = cur->high_water;
		hz.lowered = hz.high_water < pos;
		while (hz.nholes > 0 && hz.holes[hz.nholes - 1] >= hz.high_water)
			hz.nholes--;
	}
	if (hz.lowered)
	{
		/* the page ends below the first change it may not claim */
		pull_trim(pg, hz.high_water);
		capped = more = false;
	}
	if (capped || more)
	{
		/* a continuation: it owes everything above its position */
		int64		start = pc->start_e == 0 ? 0 : Min(pc->start_e, hz.high_water);

		pg->cursor_out = pull_encode_cursor(true, start, &hz);
		pg->has_more = true;
	}
	else if (pc->start_e == 0 && hz.high_water > 0 && hz.high_water < rs.reaped_seq)
	{
		/*
		 * A bootstrap lowered below the reap horizon (a hole there that it
		 * may not claim) stays a bootstrap: a checkpoint there would be
		 * expired at the next pull.
		 */
		pg->cursor_out = pull_encode_cursor(true, 0, &hz);
		pg->has_more = true;
	}
	else
	{
		/*
		 * Holes, or changes in flight above a lowered high-water, are owed:
		 * the device comes back for them.
		 */
		pg->cursor_out = pull_encode_cursor(false, 0, &hz);
		pg->has_more = hz.nholes > 0 || hz.lowered;
	}
	pg->claimed_hw = hz.high_water;
	pg->progress = pg->nrows > 0 || pg->ntombs > 0 || !pg->has_more ||
		VARSIZE_ANY_EXHDR(pg->cursor_out) != VARSIZE_ANY_EXHDR(pc->cursor_in) ||
		memcmp(VARDATA_ANY(pg->cursor_out), VARDATA_ANY(pc->cursor_in),
			   VARSIZE_ANY_EXHDR(pc->cursor_in)) != 0;
}

/* The page's grants: (table, bucket value) of every delivered row. */
static void
pull_record_grants(PullCall *pc, PullPage *pg)
{
	const char **tables = palloc(sizeof(char *) * Max(pg->nrows, 1));
	const char **values = palloc(sizeof(char *) * Max(pg->nrows, 1));
	int			n = 0;
	int			i;

	for (i = 0; i < pg->nrows; i++)
	{
		if (pg->row_grants[i] == NULL)
			continue;			/* held already */
		tables[n] = pg->rows[i].table_name;
		values[n++] = pg->row_grants[i];
	}
	if (n > 0 && pull_read_only())
		pull_needs_primary("this pull must record a bucket grant, which a read-only transaction cannot",
						   psprintf("The page delivers the caller's first row of table %s, bucket value %s; "
									"the grant that entitles it to that bucket value's deletions is written "
									"with it.",
									pull_quote(tables[0]), pull_quote(values[0])));
	kz_grants_record(pc->sub, tables, values, n);
}

/*
 * The client registry.  Read-write: record the cursor handed out (and,
 * from cursor 0, the reap horizon a bootstrap began at).  Read-only: the
 * cursor and last_seen stay as they were; only a bootstrap needs the
 * registry written, unless it already holds this very horizon.
 */
static void
pull_register(PullCall *pc, PullPage *pg)
{
	bool		bootstrap = !pc->cur->has_start && pc->cur->high_water == 0 &&
		pc->cur->nholes == 0;
	int64		horizon;

	if (!pull_read_only())
	{
		kz_registry_touch(pc->sub, pc->client, pc->schema_version,
						  pg->cursor_out, bootstrap, pg->reaped_seq, NULL);
		return;
	}
	if ((!kz_registry_read(pc->sub, pc->client, &horizon) ||
		 horizon != pg->reaped_seq) && bootstrap)
		pull_needs_primary("this pull must register the client's bootstrap, which a read-only transaction cannot",
						   "A table of this pull registers clients, and a bootstrap (cursor \"0\") records "
						   "the reap horizon it began at so that its later pages can be checked.");
}

/*
 * The final attempt's writes and envelope.  The page is built in callcxt
 * (SPI's memory goes at SPI_finish).
 */
static Jsonb *
pull_finish(PullCall *pc, PullPage *pg, MemoryContext callcxt)
{
	Jsonb	   *conflicts = NULL;
	MemoryContext old;
	Jsonb	   *page;

	if (pg->signal != NULL)
	{
		old = MemoryContextSwitchTo(callcxt);
		page = kz_page_signal(pg->signal, pc->cursor_in);
		MemoryContextSwitchTo(old);
		return page;
	}
	if (pg->nrows > 0)
	{
		KzJournalRow *jr = palloc(sizeof(KzJournalRow) * pg->nrows);
		int			i;

		for (i = 0; i < pg->nrows; i++)
		{
			jr[i].seq = pg->rows[i].seq;
			jr[i].table_name = pg->rows[i].table_name;
			jr[i].pk = pg->rows[i].pk;
			jr[i].row = pg->rows[i].row;
			jr[i].journaled = pg->row_journaled[i];
		}
		conflicts = kz_journal_conflicts(jr, pg->nrows);
	}

	/* 13. writes: grants, then the client registry */
	if (pc->sub != NULL && pg->nrows > 0)
		pull_record_grants(pc, pg);
	if (pc->register_any && pc->client != NULL)
	{
		if (pc->sub == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("registering a client requires a JWT \"sub\" claim"),
					 errdetail("A table of this pull registers clients, and the caller has no user id.")));
		pull_register(pc, pg);
	}

	old = MemoryContextSwitchTo(callcxt);
	page = kz_page_build(pg->rows, pg->nrows, pg->tombs, pg->ntombs, pg->cursor_out,
						 pg->has_more, conflicts);
	MemoryContextSwitchTo(old);
	return page;
}

/*
 * The end of the WAL inserted so far: every commit the snapshot taken just
 * before sees lies at or below it.  GetXLogInsertRecPtr() answers a usable
 * position, which at a page boundary lies past the page header that is not
 * written yet; XLogFlush() of that position fails, so step back to the
 * boundary (as XLogBytePosToEndRecPtr() does).
 */
static XLogRecPtr
pull_insert_end(void)
{
	XLogRecPtr	ptr = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(ptr, wal_segment_size) == SizeOfXLogLongPHD)
		ptr -= SizeOfXLogLongPHD;
	else if (ptr % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		ptr -= SizeOfXLogShortPHD;
	return ptr;
}

/*
 * May a pull that made no progress wait for the changes in flight?  Not for
 * its own transaction's: a new snapshot would show nothing new.
 */
static bool
pull_may_wait(PullCall *pc, const PullPage *pg, TimestampTz began)
{
	if (pc->settings.pull_wait_ms <= 0 || IsolationUsesXactSnapshot() ||
		kz_stamp_xact_recorded() || pg->nown > 0)
		return false;
	return !TimestampDifferenceExceeds(began, GetCurrentTimestamp(), pc->settings.pull_wait_ms);
}

static void
pull_sleep(int ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

static Jsonb *
pull_call(FunctionCallInfo fcinfo)
{
	MemoryContext callcxt = CurrentMemoryContext;
	PullCall   *pc = palloc0(sizeof(PullCall));
	int			render_level;
	TimestampTz began = GetCurrentTimestamp();
	int			nap = 10;
	Jsonb	   *page = NULL;
	MemoryContext spicxt;
	bool		gates_passed;

	kz_entry_reader(fcinfo, PULL_FNAME, true, &pc->caller);
	render_level = kz_render_settings_begin();

	/*
	 * The request lives for the whole call; each attempt at a page runs in
	 * an SPI connection of its own, so that what it renders is freed when
	 * it is not the page returned.
	 */
	kz_spi_connect();
	spicxt = MemoryContextSwitchTo(callcxt);
	gates_passed = pull_gates(fcinfo, pc);
	if (gates_passed)
		kz_pull_cast_params(&pc->req, &pc->pt);	/* 11. params through their types */
	else
		page = kz_page_signal("RESET_REQUIRED", pc->cursor_in);
	MemoryContextSwitchTo(spicxt);
	kz_spi_finish();

	if (gates_passed)
	{

		for (;;)
		{
			Snapshot	snap;
			XLogRecPtr	seen_lsn;
			PullPage	pg;

			kz_spi_connect();
			snap = RegisterSnapshot(GetTransactionSnapshot());
			seen_lsn = RecoveryInProgress() ? InvalidXLogRecPtr : pull_insert_end();
			PushActiveSnapshot(snap);
			pull_attempt(pc, snap, &pg);
			PopActiveSnapshot();
			UnregisterSnapshot(snap);
			if (pg.progress || !pull_may_wait(pc, &pg, began))
			{
				if (pg.behind)
					pull_needs_primary("this standby has not replayed the cursor's position yet",
									   psprintf("The cursor is at " INT64_FORMAT "; the standby has replayed "
												"numbering up to " INT64_FORMAT ".",
												Max(pc->cur->high_water, pc->cur->start), pg.drawn));

				/*
				 * A cursor must never claim a change that is not durable:
				 * with synchronous_commit off a visible commit may not be
				 * flushed yet, and a crash would let the sequence hand its
				 * seq out again.  A standby replays only WAL the primary
				 * has flushed (and it has flushed itself), so what it
				 * claims is durable already.
				 */
				if (pg.claimed_hw > pc->cur->high_water && !XLogRecPtrIsInvalid(seen_lsn))
					XLogFlush(seen_lsn);
				page = pull_finish(pc, &pg, callcxt);
				kz_spi_finish();
				break;
			}
			kz_spi_finish();
			pull_sleep(nap);
			nap = Min(nap * 2, 200);
		}
	}

	kz_render_settings_end(render_level);
	return page;
}

static Datum
pull_entry(FunctionCallInfo fcinfo)
{
	ErrorContextCallback cb;
	Jsonb	   *page;

	kz_errcontext_push(&cb, PULL_FNAME);
	page = pull_call(fcinfo);
	kz_errcontext_pop(&cb);
	PG_RETURN_JSONB_P(page);
}

Datum
kz_pull(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, PULL_FNAME, pull_entry);
}
