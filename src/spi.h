/*-------------------------------------------------------------------------
 *
 * spi.h
 *	  SPI with kept plans: one style for every statement kizunasync runs
 *	  through SPI.  Implemented in src/spi.c.
 *
 *	  Statement texts are built from catalog names only (quote_identifier),
 *	  never from values; values are always parameters.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_SPI_H
#define KZ_SPI_H

#include "executor/spi.h"

/* SPI_connect / SPI_finish that raise on failure. */
extern void kz_spi_connect(void);
extern void kz_spi_finish(void);

/*
 * A kept plan for sql, prepared once per backend and role (PostgreSQL's
 * plan cache revalidates it after DDL and replans it for another
 * search_path or row-security role).  The cache holds at most
 * KZ_PLAN_CACHE_SIZE plans and evicts the least recently used one that the
 * current transaction has not used; when every plan is in use, a plan for
 * this SPI connection only is returned.  Must be called inside SPI.
 */
#define KZ_PLAN_CACHE_SIZE	256

extern SPIPlanPtr kz_plan(const char *sql, int nargs, const Oid *argtypes);

/*
 * Execute sql (through kz_plan) as the current user.  expect is the SPI
 * result code the statement must give (SPI_OK_SELECT, ...); anything else
 * is an internal error naming the statement.  Returns SPI_processed; the
 * rows are in SPI_tuptable until the caller frees them
 * (SPI_freetuptable) or SPI_finish.  Unlike SPI's own calls, it leaves
 * the caller's memory context current.
 */
extern uint64 kz_spi_run(const char *sql, int nargs, const Oid *argtypes,
						 Datum *values, const char *nulls, bool read_only,
						 long count, int expect);

/* kz_spi_run inside a privileged section (bookkeeping statements). */
extern uint64 kz_spi_priv(const char *sql, int nargs, const Oid *argtypes,
						  Datum *values, const char *nulls, bool read_only,
						  long count, int expect);

/*
 * kz_spi_priv with the given snapshot instead of the transaction's (its
 * command id advanced, so this transaction's earlier writes are seen): a
 * bookkeeping read that must see what committed after the statement
 * began, e.g. after a lock wait.
 */
extern uint64 kz_spi_priv_snapshot(const char *sql, int nargs, const Oid *argtypes,
								   Datum *values, const char *nulls, Snapshot snap,
								   long count, int expect);

/* Number of plans currently kept (for tests). */
extern PGDLLEXPORT int	kz_plan_cache_count(void);

#endif							/* KZ_SPI_H */
