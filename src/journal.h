/*-------------------------------------------------------------------------
 *
 * journal.h
 *	  The opt-in conflict journal (kizunasync.conflict_journal): push
 *	  records the values a winning write overwrote; pull attaches them to
 *	  the delivered row of the winning entry.  Must be called inside SPI.
 *	  Implemented in src/journal.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_JOURNAL_H
#define KZ_JOURNAL_H

#include "utils/jsonb.h"

/* A delivered row of a pull page, for matching journal entries. */
typedef struct KzJournalRow
{
	int64		seq;
	const char *table_name;
	const char *pk;
	Jsonb	   *row;
	bool		journaled;		/* its table has conflict_journal on */
} KzJournalRow;

/*
 * The page's "conflicts": journal rows whose winner_seq is the seq of a
 * delivered row (rows ascending by seq) of the same table and pk whose row
 * carries the column.  NULL when nothing matches.  Ordered by table, pk,
 * column.
 */
extern Jsonb *kz_journal_conflicts(const KzJournalRow *rows, int n);

/*
 * Record the values of columns names[0 .. n-1] (non-key) that the winning
 * mutation overwrote: prior and after are the caller-visible row before and
 * after the write.  Returns whether anything was recorded.
 */
extern bool kz_journal_record(const char *table_name, const char *pk, const char *mutation_id,
							  const char *mode, const char **names, int n,
							  Jsonb *prior, Jsonb *after);

/* Fill in winner_seq of the journal rows of an applied, numbered mutation. */
extern void kz_journal_winner_seq(const char *mutation_id);

#endif							/* KZ_JOURNAL_H */
