/*-------------------------------------------------------------------------
 *
 * plancache.h
 *	  Backend-lifetime cache of SPI plans for the statements pull and push
 *	  build (their text names the table and columns, so the text decides the
 *	  parameter types).  Implemented in src/plancache.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PLANCACHE_H
#define KZ_PLANCACHE_H

#include "postgres.h"
#include "executor/spi.h"

/*
 * A plan for sql, prepared once per backend and current role and kept
 * (PostgreSQL's plan cache revalidates it after DDL).  Past a bound on the
 * number of kept plans, a plan prepared for this call only is returned (it
 * is freed with the SPI connection).  Must be called inside SPI.
 */
extern SPIPlanPtr kz_plan_cached(const char *sql, int nargs, Oid *argtypes);

#endif							/* KZ_PLANCACHE_H */
