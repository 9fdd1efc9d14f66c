/*-------------------------------------------------------------------------
 *
 * request_pull_jsonb.h
 *	  The "buckets" argument of kizunasync.pull parsed straight from its
 *	  jsonb, with no JSON text in between (decisions/0025, item 7): the
 *	  same request and the same first error as kz_pull_request_parse()
 *	  (request_pull.h) on the text JsonbToCString() makes of it, which
 *	  stays the reference (the fuzzer's) and the path for what this one
 *	  cannot promise that of.  Implemented in src/request_pull_jsonb.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_REQUEST_PULL_JSONB_H
#define KZ_REQUEST_PULL_JSONB_H

#include "utils/jsonb.h"

#include "request_pull.h"

/*
 * Parse bj as kz_pull_request_parse() would parse its text, measuring that
 * text (JsonbToCString's) without printing it and stopping once it passes
 * the limit.  Returns false when the database encoding is not UTF-8 and the
 * text is within the limit (then the caller parses the text); otherwise
 * true with *rc: 0 and *out filled, or -1 and *err.
 */
extern bool kz_pull_request_from_jsonb(Jsonb *bj, int max_buckets, KzPullRequest *out,
									   KzReqError *err, int *rc);

#endif							/* KZ_REQUEST_PULL_JSONB_H */
