/*-------------------------------------------------------------------------
 *
 * in_flight.c
 *	  kizunasync._in_flight() RETURNS TABLE (pid integer, prepared_gid text,
 *	  since timestamptz, seqs bigint, lowest_seq bigint, tables text[]),
 *	  read through the operator view kizunasync.in_flight: what holds the
 *	  seqs in flight that cursors stop at or list as holes
 *	  (decisions/0010-sequencing.md, "Prepared transactions").
 *
 *	  Seqs in flight are entries (entry.h) whose inserting
 *	  transaction has not ended: the holes of every cursor that reaches
 *	  them.  Such an entry cannot lie on a page the visibility map marks
 *	  all-visible (an insert clears the bit, and only VACUUM sets it again,
 *	  once every tuple is visible to everyone), so only the other pages are
 *	  read: the cost follows what was written since VACUUM last passed, not
 *	  the size of the tables.  Each tuple's xmin is checked against a fresh
 *	  snapshot (no lock per tuple); an entry of a running transaction is
 *	  counted for its top-level transaction, which is then named by the
 *	  backend running it (pid, the transaction's start) or, prepared, by its
 *	  gid and prepare time.  On a hot standby a transaction of the primary
 *	  has neither.  No row data, no keys, no bucket values, no user ids:
 *	  only synced table names.  A moment's picture: entries inserted while
 *	  it reads may be missed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/subtrans.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/visibilitymap.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "bookkeeping.h"
#include "entry.h"
#include "identity.h"
#include "pgcompat.h"
#include "spi.h"

PG_FUNCTION_INFO_V1(kz_in_flight);

#define IN_FLIGHT_FNAME	"kizunasync._in_flight()"
#define IN_FLIGHT_NCOLS	6

/* One transaction holding seqs in flight (keyed by its top-level xid). */
typedef struct InFlightHolder
{
	TransactionId xid;
	int64		seqs;
	int64		lowest;
	List	   *tables;			/* distinct table names (char *) */
} InFlightHolder;

/* Has xmin, seen in snap, not ended yet (ours included)? */
static bool
in_flight_running(TransactionId xmin, Snapshot snap)
{
	if (!TransactionIdIsNormal(xmin))
		return false;
	if (TransactionIdIsCurrentTransactionId(xmin))
		return true;
	if (!XidInMVCCSnapshot(xmin, snap))
		return false;			/* ended before snap was taken */
	return TransactionIdIsInProgress(xmin);
}

static void
in_flight_note(HTAB *holders, TransactionId xmin, int64 seq, const char *table)
{
	TransactionId top = TransactionIdIsCurrentTransactionId(xmin)
		? GetTopTransactionIdIfAny() : SubTransGetTopmostTransaction(xmin);
	InFlightHolder *h;
	bool		found;
	ListCell   *lc;

	h = hash_search(holders, &top, HASH_ENTER, &found);
	if (!found)
	{
		h->seqs = 0;
		h->lowest = seq;
		h->tables = NIL;
	}
	h->seqs++;
	h->lowest = Min(h->lowest, seq);
	foreach(lc, h->tables)
		if (strcmp(lfirst(lc), table) == 0)
			return;
	h->tables = lappend(h->tables, pstrdup(table));
}

/* What the scan of the entries needs: the snapshot, the holders, table names by id. */
typedef struct InFlightScan
{
	Snapshot	snap;
	HTAB	   *holders;
	int			ntables;
	int32	   *ids;
	char	  **names;
} InFlightScan;

static void
in_flight_entry(void *arg, TransactionId xmin, int64 seq, int32 tid)
{
	InFlightScan *sc = arg;
	const char *table = "?";
	int			i;

	if (!in_flight_running(xmin, sc->snap))
		return;
	for (i = 0; i < sc->ntables; i++)
		if (sc->ids[i] == tid)
			table = sc->names[i];
	in_flight_note(sc->holders, xmin, seq, table);
}

/* The synced tables' ids and wire names (inside SPI). */
static void
in_flight_table_names(InFlightScan *sc)
{
	uint64		n = kz_spi_priv("SELECT id, table_name FROM kizunasync.synced_tables",
								0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
	uint64		i;

	sc->ntables = (int) n;
	sc->ids = palloc(sizeof(int32) * Max(n, 1));
	sc->names = palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		sc->ids[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		sc->names[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
	}
	SPI_freetuptable(SPI_tuptable);
}

static int
in_flight_cmp_lowest(const void *a, const void *b)
{
	const InFlightHolder *x = *(const InFlightHolder *const *) a;
	const InFlightHolder *y = *(const InFlightHolder *const *) b;

	return (x->lowest > y->lowest) - (x->lowest < y->lowest);
}

static int
in_flight_cmp_name(const ListCell *a, const ListCell *b)
{
	return strcmp(lfirst(a), lfirst(b));
}

/*
 * The backend running top-level xid: its pid (0: none, e.g. a prepared
 * transaction) and, when the statistics this transaction reads know it,
 * its transaction's start (else 0).
 */
static int
in_flight_backend(TransactionId xid, TimestampTz *since)
{
	int			pid = BackendXidGetPid(xid);
	int			n;
	int			i;

	*since = 0;
	if (pid == 0)
		return 0;
	n = pgstat_fetch_stat_numbackends();
	for (i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *b = kz_local_beentry(i);

		if (b != NULL && b->backendStatus.st_procpid == pid)
			*since = b->backendStatus.st_xact_start_timestamp;
	}
	return pid;
}

/* The prepared transaction xid: its gid and prepare time (inside SPI). */
static bool
in_flight_prepared(TransactionId xid, char **gid, TimestampTz *since)
{
	Oid			types[1] = {XIDOID};
	Datum		vals[1];
	bool		isnull;

	vals[0] = TransactionIdGetDatum(xid);
	if (kz_spi_priv("SELECT gid, prepared FROM pg_catalog.pg_prepared_xacts"
					" WHERE transaction OPERATOR(pg_catalog.=) $1",
					1, types, vals, NULL, true, 1, SPI_OK_SELECT) == 0)
		return false;
	*gid = TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											 1, &isnull));
	*since = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											   2, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return true;
}

static Datum
in_flight_tables(List *tables)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(tables), 1));
	ListCell   *lc;
	int			n = 0;

	list_sort(tables, in_flight_cmp_name);
	foreach(lc, tables)
		elems[n++] = CStringGetTextDatum(lfirst(lc));
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

static Datum
in_flight_body(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KzCaller	caller;
	HASHCTL		ctl;
	HTAB	   *holders;
	HASH_SEQ_STATUS hs;
	InFlightHolder *h;
	InFlightHolder **sorted;
	Snapshot	snap;
	InFlightScan sc;
	long		n = 0,
				i;

	kz_entry_reader(fcinfo, IN_FLIGHT_FNAME, true, &caller);
	InitMaterializedSRF(fcinfo, 0);

	ctl.keysize = sizeof(TransactionId);
	ctl.entrysize = sizeof(InFlightHolder);
	ctl.hcxt = CurrentMemoryContext;
	holders = hash_create("kizunasync in flight", 64, &ctl,
						  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	snap = RegisterSnapshot(GetLatestSnapshot());
	sc.snap = snap;
	sc.holders = holders;
	kz_spi_connect();
	in_flight_table_names(&sc);
	kz_spi_finish();
	kz_entry_scan_unsettled(in_flight_entry, &sc);
	UnregisterSnapshot(snap);

	sorted = palloc(sizeof(InFlightHolder *) * Max(hash_get_num_entries(holders), 1));
	hash_seq_init(&hs, holders);
	while ((h = hash_seq_search(&hs)) != NULL)
		sorted[n++] = h;
	qsort(sorted, n, sizeof(InFlightHolder *), in_flight_cmp_lowest);

	kz_spi_connect();
	for (i = 0; i < n; i++)
	{
		Datum		values[IN_FLIGHT_NCOLS];
		bool		nulls[IN_FLIGHT_NCOLS] = {false};
		int			pid;
		char	   *gid;
		TimestampTz since;

		h = sorted[i];
		nulls[0] = nulls[1] = nulls[2] = true;
		if ((pid = in_flight_backend(h->xid, &since)) != 0)
		{
			values[0] = Int32GetDatum(pid);
			values[2] = TimestampTzGetDatum(since);
			nulls[0] = false;
			nulls[2] = since == 0;
		}
		else if (in_flight_prepared(h->xid, &gid, &since))
		{
			values[1] = CStringGetTextDatum(gid);
			values[2] = TimestampTzGetDatum(since);
			nulls[1] = nulls[2] = false;
		}
		values[3] = Int64GetDatum(h->seqs);
		values[4] = Int64GetDatum(h->lowest);
		values[5] = in_flight_tables(h->tables);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	kz_spi_finish();
	return (Datum) 0;
}

Datum
kz_in_flight(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, IN_FLIGHT_FNAME, in_flight_body);
}
