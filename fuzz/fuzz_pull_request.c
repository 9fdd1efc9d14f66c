/*
 * fuzz_pull_request.c
 *	  libFuzzer target for the pull request parser (src/request_pull.c).
 *	  Build and run: fuzz/run.sh 60 pull_request (fuzz/build.sh, pull_request.conf).
 *
 *	  Invariants checked on every input: no crash or sanitizer report, a
 *	  failure carries a 5-character SQLSTATE of class 22 or 53 and a
 *	  non-empty message, its message and detail are printable ASCII (client
 *	  text reaches them only quoted by kz_quote), and a success yields
 *	  structs within the documented limits (entry count, param count, name
 *	  and value lengths).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request_pull.h"

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
check(const KzPullRequest *req)
{
	int			i,
				j;

	if (req->nbuckets < 0 || req->nbuckets > KZ_PULL_MAX_BUCKETS)
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	KzPullRequest req;
	KzReqError	err;

	memset(&err, 0, sizeof(err));
	if (kz_pull_request_parse((const char *) data, size, arena_alloc, &req, &err) == 0)
		check(&req);
	else
	{
		if (strlen(err.sqlstate) != 5 || err.message[0] == '\0')
			abort();
		if (strncmp(err.sqlstate, "22", 2) != 0 && strncmp(err.sqlstate, "53", 2) != 0)
			abort();
		if (req.nbuckets != 0)
			abort();
		check_printable(err.message);
		check_printable(err.detail);
	}
	arena_reset();
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
		static uint8_t buf[1 << 20];
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
