/*-------------------------------------------------------------------------
 *
 * ledger.h
 *	  The exactly-once verdict ledger (kizunasync.verdicts): one row per
 *	  decided mutation id, as narrow as a replay allows (decisions/0033).
 *	  A stored verdict keeps no row copy: push renders its server_row again
 *	  on replay.
 *	  Must be called inside SPI.  Implemented in src/ledger.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_LEDGER_H
#define KZ_LEDGER_H

#include "verdict.h"

typedef struct KzLedgerEntry
{
	char	   *user_id;		/* JWT sub of the pusher, NULL when none */
	char	   *table;			/* recorded only when verdict.has_server_row */
	char	   *pk;
	KzVerdict	verdict;		/* server_row as recorded (JSON null) */
} KzLedgerEntry;

/* The recorded verdict of mutation_id, if any. */
extern bool kz_ledger_lookup(const char *mutation_id, KzLedgerEntry *e);

/*
 * Record v for mutation_id, pushed by sub (may be NULL).  A concurrent push
 * of the same id that decided first fails this call with 40001.
 */
extern void kz_ledger_record(const char *mutation_id, const char *sub, const char *table,
							 const char *pk, const KzVerdict *v);

/*
 * The most rejections one user keeps in the ledger (decisions/0033).  A
 * rejection wrote nothing, so one that is no longer recorded is decided
 * afresh on replay: it can still take effect at most once.
 */
#define KZ_LEDGER_MAX_REJECTIONS	1000

/*
 * Forget sub's oldest recorded rejections beyond KZ_LEDGER_MAX_REJECTIONS;
 * returns how many were removed.  Verdicts of mutations that were applied
 * are never removed here.
 */
extern uint64 kz_ledger_bound_rejections(const char *sub);

#endif							/* KZ_LEDGER_H */
