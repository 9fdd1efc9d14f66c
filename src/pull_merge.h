/*-------------------------------------------------------------------------
 *
 * pull_merge.h
 *	  Reading the window of a pull's candidate stream: by seq while the
 *	  named buckets fill it, else a K-way merge of their windows
 *	  (decisions/0025, item 7).  Implemented in src/pull_merge.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PULL_MERGE_H
#define KZ_PULL_MERGE_H

#include "pull_stream.h"

/*
 * The next (at most) need candidates, in stream order.  Returns how many;
 * 0 at the end of the stream.  The window is read by seq through the seq
 * index while that costs little beyond what it hands out (the entries it
 * reads for no source stay within twice the number of sources), then as a
 * merge by seq of the sources' windows, each read a few entries at a time
 * as the merge reaches them: what a page reads is what it hands out plus
 * at most about three entries and one index descent per source
 * (decisions/0025, item 7).
 */
extern int	kz_stream_next(KzPullStream *s, KzCandidate *batch, int need);

#endif							/* KZ_PULL_MERGE_H */
