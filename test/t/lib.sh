# shellcheck shell=bash
# shellcheck disable=SC2034,SC2028  # variables are used by the sourcing scripts; echo prints psql backslash commands
# Shared helpers of the operations tests (test/t/*.sh): TAP output, psql
# wrappers, throw-away databases, Data API-shaped requests, pull paging.
# Sourced by a test after it sets T_NAME.  Needs PGHOST/PGPORT/PGUSER (the
# running test cluster) and pg_config on PATH or in $PG_CONFIG.
set -uo pipefail

T_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
T_DIR=$T_ROOT/test/t
T_BIN=$("${PG_CONFIG:-pg_config}" --bindir)
export PATH=$T_BIN:$PATH
T_OUT=${KZ_OUT:-$T_ROOT/test/out}/t/$T_NAME
rm -rf "$T_OUT"; mkdir -p "$T_OUT"
T_N=0 T_PASS=0 T_FAIL=0
T_DBS=()

# users and devices of the history (test/t/history.sh)
UA=00000000-0000-4000-8000-a10000000001
UB=00000000-0000-4000-8000-a10000000002
CONFIGURE_SIG='kizunasync.configure(integer,integer,integer,boolean,integer,integer,integer,integer,text,text,text)'
# the decided declaration: argument names, NULL defaults, result
CONFIGURE_DECL='max_pull_scan integer DEFAULT NULL::integer, max_pull_limit integer DEFAULT NULL::integer, max_batch_size integer DEFAULT NULL::integer, require_atomic boolean DEFAULT NULL::boolean, tombstone_ttl_days integer DEFAULT NULL::integer, client_ttl_days integer DEFAULT NULL::integer, hlc_max_skew_ms integer DEFAULT NULL::integer, pull_wait_ms integer DEFAULT NULL::integer, reap_schedule text DEFAULT NULL::text, compact_schedule text DEFAULT NULL::text, client_prune_schedule text DEFAULT NULL::text -> jsonb'
# configure_decl DB: configure()'s declaration in DB (empty when absent)
configure_decl() {
	q "$1" -c "SELECT pg_get_function_arguments(p.oid) || ' -> ' || pg_get_function_result(p.oid) FROM pg_proc p WHERE p.oid = to_regprocedure('$CONFIGURE_SIG')"
}

# ------------------------------------------------------------------ TAP
ok() { T_N=$((T_N + 1)); T_PASS=$((T_PASS + 1)); echo "ok $T_N - $1"; }
notok() {
	T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); echo "not ok $T_N - $1"
	shift
	local l
	for l in "$@"; do printf '%s\n' "$l" | sed 's/^/#   /'; done
}
# check DESC GOT WANT
check() { if [ "$2" = "$3" ]; then ok "$1"; else notok "$1" "got:  $2" "want: $3"; fi; }
# check_true DESC COMMAND...: passes when the command succeeds
check_true() { local d=$1; shift; if "$@"; then ok "$d"; else notok "$d"; fi; }
# check_same DESC FILE_A FILE_B: the files are equal; otherwise the first
# lines of a unified diff go to the TAP diagnostics, the whole diff to
# $T_OUT/<slug>.diff
check_same() {
	local d=$1 a=$2 b=$3 slug
	slug=$(printf '%s' "$d" | tr -c 'A-Za-z0-9' '_' | cut -c1-60)
	if diff -q "$a" "$b" >/dev/null 2>&1; then ok "$d"; return 0; fi
	diff -u "$a" "$b" > "$T_OUT/$slug.diff"
	local err=""
	if [ -s "$b.err" ]; then err="stderr of the second: $(head -n 3 "$b.err" | cut -c1-"${T_DIFF_WIDTH:-240}")"; fi
	notok "$d" "$(grep -v '^\(---\|+++\) ' "$T_OUT/$slug.diff" | head -n "${T_DIFF_LINES:-14}" | cut -c1-"${T_DIFF_WIDTH:-240}")" \
		"($(( $(grep -c '^[-+]' "$T_OUT/$slug.diff") - 2 )) lines differ; full diff: $T_OUT/$slug.diff)" ${err:+"$err"}
	return 1
}
skip() { T_N=$((T_N + 1)); T_PASS=$((T_PASS + 1)); echo "ok $T_N - $1 # SKIP $2"; }
note() { printf '%s\n' "$@" | sed 's/^/# /'; }
finish() {
	echo "1..$T_N"
	echo "# $T_NAME: $T_PASS passed, $T_FAIL failed"
	[ "${KZ_T_KEEP:-0}" = 1 ] || drop_dbs
	[ "$T_FAIL" -eq 0 ]
}

# ------------------------------------------------------------------ databases
# q DB [psql args]: quiet, unaligned, tuples only, stop on error
q() { local db=$1; shift; psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$db" "$@"; }
# newdb DB: an empty database (template0), dropped by finish
newdb() {
	dropdb --if-exists --force "$1" >/dev/null 2>&1
	createdb -T template0 "$1" && T_DBS+=("$1")
}
# appdb DB: an empty database with the Supabase stand-ins
appdb() { newdb "$1" && q "$1" -f "$T_ROOT/test/setup/standins.sql" >/dev/null; }
drop_dbs() { local d; for d in "${T_DBS[@]}"; do dropdb --if-exists --force "$d" >/dev/null 2>&1; done; }

# ------------------------------------------------------------------ requests
# api LABEL SUB CALL: psql text for one Data API request, as PostgREST makes
# it: one transaction, SET LOCAL ROLE authenticated, the JWT claims as a
# transaction-local setting, the RPC with named arguments.  The response is
# left in psql variable :r and recorded as kzt.calls(label).
api() {
	local label=$1 sub=$2 call=$3
	cat <<SQL
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "$sub", "role": "authenticated"}', true) IS NOT NULL AS claims_set \gset
SELECT $call AS r \gset
COMMIT;
INSERT INTO kzt.calls (label, response) VALUES ('$label', :'r');
SQL
}

# pull_pages DEVICE SUB BUCKETS LIMIT CLIENT [MAXPAGES]: psql text that
# pulls from the cursor in psql variable :cur until has_more is false (at
# most MAXPAGES pages), one request per page; each page is echoed as
# "DEVICE page N: <response>" and :cur is left at the last cursor.  A
# CLIENT of NULL sends no client_id.
pull_pages() {
	local dev=$1 sub=$2 buckets=$3 lim=$4 client=$5 max=${6:-25} i cl
	if [ "$client" = NULL ]; then cl=NULL; else cl="'$client'"; fi
	echo "\\set more true"
	for i in $(seq 1 "$max"); do
		cat <<SQL
\\if :more
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "$sub", "role": "authenticated"}', true) IS NOT NULL AS claims_set \\gset
SELECT r, r ->> 'cursor' AS cur, coalesce((r ->> 'has_more')::boolean, false) AS more
  FROM (SELECT kizunasync.pull(buckets => '$buckets', cursor => :'cur', schema_version => 1,
                               "limit" => $lim, client_id => $cl) AS r) s \\gset
COMMIT;
\\echo $dev page $i: :r
\\endif
SQL
	done
	echo "\\if :more"
	echo "\\echo $dev: still has_more after $max pages"
	echo "\\endif"
}

# bucket sets of the history's users (see history.sh)
buckets_of() {
	echo "[{\"table\": \"notes\", \"params\": {\"owner_id\": \"$1\"}}, {\"table\": \"tasks\", \"params\": {\"owner_id\": \"$1\"}}, {\"table\": \"labels\"}]"
}
