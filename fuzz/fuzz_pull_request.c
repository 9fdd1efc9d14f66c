/*
 * fuzz_pull_request.c
 *	  libFuzzer target for the pull request parser (src/request_pull.c).
 *	  Build and run: fuzz/run.sh 60 pull_request (fuzz/build.sh, pull_request.conf).
 *
 *	  Each input is parsed twice: with the max_pull_buckets setting at its
 *	  default (1,000, the limit fuzzed; fuzz/seed_pull_request.py seeds
 *	  requests of 1,000 and 1,001 entries) and at the reference pack's 64.
 *	  Invariants checked on every input: no crash or sanitizer report, a
 *	  failure carries a 5-character SQLSTATE of class 22 or 53 and a
 *	  non-empty message, its message and detail are printable ASCII (client
 *	  text reaches them only quoted by kz_quote), a success yields structs
 *	  within the documented limits (entry count, param count, name and value
 *	  lengths), and the two parses agree: a request the larger limit accepts
 *	  with at most 64 entries the smaller accepts alike, one with more it
 *	  refuses with 22023.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request_pull.h"

#define FUZZ_MAX_BUCKETS	1000	/* the setting's default (src/settings.c) */
#define FUZZ_PACK_BUCKETS	64

/* Every allocation of one parse, released together afterwards. */
static void **arena;
static size_t arena_n;
static size_t arena_cap;

static void *
arena_alloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
		abort();
	if (arena_n == arena_cap)
	{
		arena_cap = arena_cap ? arena_cap * 2 : 64;
		arena = realloc(arena, arena_cap * sizeof(void *));
		if (arena == NULL)
			abort();
	}
	arena[arena_n++] = p;
	return p;
}

static void
arena_reset(void)
{
	size_t		i;

	for (i = 0; i < arena_n; i++)
		free(arena[i]);
	arena_n = 0;
}

/* Client text reaches a message only quoted (quote.h): printable ASCII. */
static void
check_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char) *s < 0x20 || (unsigned char) *s >= 0x7f)
			abort();
}

static void
check(const KzPullRequest *req, int max_buckets)
{
	int			i,
				j;

	if (req->nbuckets < 0 || req->nbuckets > max_buckets)
		abort();
	for (i = 0; i < req->nbuckets; i++)
	{
		const KzPullBucket *b = &req->buckets[i];
		size_t		tl = strlen(b->table);

		if (tl == 0 || tl > KZ_PULL_MAX_NAME)
			abort();
		if (b->nparams < 0 || b->nparams > KZ_PULL_MAX_PARAMS)
			abort();
		for (j = 0; j < b->nparams; j++)
		{
			const KzPullParam *p = &b->params[j];
			size_t		nl = strlen(p->name);

			if (nl == 0 || nl > KZ_PULL_MAX_NAME)
				abort();
			if ((p->kind == KZ_PARAM_NULL) != (p->text == NULL))
				abort();
			if (p->text && strlen(p->text) > KZ_PULL_MAX_VALUE)
				abort();
		}
	}
}

/* Parse with the given limit and check the invariants; the entry count, or -1 and *err. */
static int
parse_checked(const uint8_t *data, size_t size, int max_buckets, KzReqError *err)
{
	KzPullRequest req;
	int			n = -1;

	memset(err, 0, sizeof(*err));
	if (kz_pull_request_parse((const char *) data, size, max_buckets, arena_alloc, &req, err) == 0)
	{
		check(&req, max_buckets);
		n = req.nbuckets;
	}
	else
	{
		if (strlen(err->sqlstate) != 5 || err->message[0] == '\0')
			abort();
		if (strncmp(err->sqlstate, "22", 2) != 0 && strncmp(err->sqlstate, "53", 2) != 0)
			abort();
		if (req.nbuckets != 0)
			abort();
		check_printable(err->message);
		check_printable(err->detail);
	}
	arena_reset();
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	KzReqError	err;
	int			n = parse_checked(data, size, FUZZ_MAX_BUCKETS, &err);
	int			m = parse_checked(data, size, FUZZ_PACK_BUCKETS, &err);

	/* inputs are shorter than either text limit: only the count differs */
	if (size <= kz_pull_max_text(FUZZ_PACK_BUCKETS))
	{
		if (n >= 0 && n <= FUZZ_PACK_BUCKETS && m != n)
			abort();
		if (n > FUZZ_PACK_BUCKETS && (m != -1 || strcmp(err.sqlstate, "22023") != 0))
			abort();
		if (n < 0 && m >= 0)
			abort();
	}
	return 0;
}

#ifdef KZ_FUZZ_MAIN
/* Replay driver: run each file named on the command line once. */
int
main(int argc, char **argv)
{
	int			i;

	for (i = 1; i < argc; i++)
	{
		FILE	   *f = fopen(argv[i], "rb");
		static uint8_t buf[1 << 23];
		size_t		n;

		if (f == NULL)
			continue;
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
	}
	printf("%d inputs replayed\n", argc - 1);
	return 0;
}
#endif
