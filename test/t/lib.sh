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
T_ROLES=()
T_AT_FINISH=()

# users and devices of the history (test/t/history.sh)
UA=00000000-0000-4000-8000-a10000000001
UB=00000000-0000-4000-8000-a10000000002
# configure() by name: its argument list grew (0.3.0: max_pull_buckets), so
# a release's own signature is whatever that release declares
CONFIGURE_NAME='kizunasync.configure'
# the decided declaration: argument names, NULL defaults, result
CONFIGURE_DECL='max_pull_scan integer DEFAULT NULL::integer, max_pull_limit integer DEFAULT NULL::integer, max_batch_size integer DEFAULT NULL::integer, require_atomic boolean DEFAULT NULL::boolean, tombstone_ttl_days integer DEFAULT NULL::integer, client_ttl_days integer DEFAULT NULL::integer, hlc_max_skew_ms integer DEFAULT NULL::integer, pull_wait_ms integer DEFAULT NULL::integer, reap_schedule text DEFAULT NULL::text, compact_schedule text DEFAULT NULL::text, client_prune_schedule text DEFAULT NULL::text, max_pull_buckets integer DEFAULT NULL::integer -> jsonb'
# configure_decl DB: configure()'s declaration in DB (empty when absent)
configure_decl() {
	q "$1" -c "SELECT pg_get_function_arguments(p.oid) || ' -> ' || pg_get_function_result(p.oid) FROM pg_proc p WHERE p.oid = to_regproc('$CONFIGURE_NAME')"
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
# cleanup: the at_finish commands, then drop the databases and roles
# (unless KZ_T_KEEP=1)
cleanup() {
	[ "${KZ_T_KEEP:-0}" = 1 ] && return 0
	local c
	for c in "${T_AT_FINISH[@]}"; do eval "$c" >/dev/null 2>&1; done
	drop_dbs
	drop_roles
}
finish() {
	echo "1..$T_N"
	echo "# $T_NAME: $T_PASS passed, $T_FAIL failed"
	cleanup
	[ "$T_FAIL" -eq 0 ]
}
# bail REASON: stop the test (TAP "Bail out!"), cleaning up as finish does
bail() { echo "Bail out! $1"; cleanup; exit 1; }
# at_finish COMMAND: run by finish before the databases are dropped (e.g.
# dropping a subscription, whose slot keeps its database from being dropped)
at_finish() { T_AT_FINISH+=("$1"); }

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

# ------------------------------------------------------------------ roles
# Operational steps run as a non-superuser database owner, as on Supabase
# (whose "postgres" owns the database but is no superuser); the superuser
# only installs the extension, as Supabase's platform does.
# owner_role ROLE: a LOGIN NOSUPERUSER role kz_t_*, dropped by finish (one
# left over by an interrupted run is reused).  Another role that exists is
# used as it is and kept: KZ_T_OWNER=postgres runs the owner's steps as the
# superuser, to see past a missing privilege.
owner_role() {
	if [ "$(q postgres -c "SELECT count(*) FROM pg_roles WHERE rolname = '$1'")" = 0 ]; then
		q postgres -c "CREATE ROLE $1 LOGIN NOSUPERUSER" >/dev/null || return 1
	fi
	case $1 in kz_t_*) T_ROLES+=("$1") ;; esac
}
drop_roles() { local r; for r in "${T_ROLES[@]}"; do q postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1; done; }
# owned_appdb DB OWNER: a database owned by OWNER (an owner_role), with the
# Supabase stand-ins (usable by OWNER, as Supabase's "postgres" may use
# auth.uid() in its policies), the extension installed by the superuser,
# and the test's schema kzt (kzt_sql)
owned_appdb() {
	dropdb --if-exists --force "$1" >/dev/null 2>&1
	createdb -T template0 -O "$2" "$1" && T_DBS+=("$1") &&
		q "$1" -f "$T_ROOT/test/setup/standins.sql" >/dev/null &&
		q "$1" -c "CREATE EXTENSION kizunasync; GRANT USAGE ON SCHEMA auth, storage TO $2" >/dev/null &&
		kzt_sql | q "$1" >/dev/null
}
# qo DB [psql args]: q as the owner role $T_OWNER
qo() { local db=$1; shift; psql -X -q -A -t -v ON_ERROR_STOP=1 -U "$T_OWNER" -d "$db" "$@"; }
# sqlstate DB USER SQL: run SQL as USER in its own session; prints the
# SQLSTATE it ended with (00000 on success) and the error message
sqlstate() {
	local out
	out=$(psql -X -q -A -t -U "$2" -d "$1" -v VERBOSITY=verbose 2>&1 >/dev/null <<SQL | sed -n 's/^\(psql:[^ ]* \)\{0,1\}ERROR:  \([0-9A-Z]\{5\}\): \(.*\)/\2 \3/p' | head -n 1
\set ON_ERROR_STOP 1
$3
SQL
)
	echo "${out:-00000}"
}

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

# request SUB CALL: one Data API request against $DB (the sourcing script's
# database), as api does; prints the call's result, or "ERROR <sqlstate>
# <message>"
request() {
	psql -X -q -A -t -d "$DB" -v VERBOSITY=verbose 2>&1 <<SQL | sed -n -e 's/^\(psql:[^ ]* \)\{0,1\}ERROR:  \([0-9A-Z]\{5\}\): \(.*\)/ERROR \2 \3/p' -e '/^RESULT /s/^RESULT //p' | head -n 1
\set ON_ERROR_STOP 1
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "$1", "role": "authenticated"}', true) IS NULL AS x \gset
SELECT ($2)::text AS r \gset
COMMIT;
\echo RESULT :r
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

# ------------------------------------------------------------------ sessions
# A background session: a psql reading its input from a FIFO, so a test can
# hold a transaction open across its steps.  Output (and errors) go to
# $T_OUT/sess.NAME.out.
# sess_open NAME DB [ROLE]; sess_send NAME SQL; sess_sync NAME (wait, at
# most 60 s, until the session ran everything sent); sess_close NAME
sess_open() {
	local f=$T_OUT/sess.$1.fifo fd
	rm -f "$f"; mkfifo "$f"
	psql -X -q -A -t -U "${3:-$PGUSER}" -d "$2" -v application_name="kz_t_$1" < "$f" > "$T_OUT/sess.$1.out" 2>&1 &
	eval "T_SESS_PID_$1=$!"
	exec {fd}>"$f"
	eval "T_SESS_FD_$1=$fd"
	sess_send "$1" "SET application_name = 'kz_t_$1';"
}
sess_send() { local fd; eval "fd=\$T_SESS_FD_$1"; printf '%s\n' "$2" >&"$fd"; }
sess_sync() {
	local tag="sync-$RANDOM-$RANDOM" i
	sess_send "$1" "\\echo $tag"
	for i in $(seq 1 600); do
		grep -q "^$tag\$" "$T_OUT/sess.$1.out" && return 0
		sleep 0.1
	done
	return 1
}
sess_close() {
	local fd pid
	eval "fd=\$T_SESS_FD_$1 pid=\$T_SESS_PID_$1"
	sess_send "$1" "\\q"
	exec {fd}>&-
	wait "$pid" 2>/dev/null
	rm -f "$T_OUT/sess.$1.fifo"
}

# ------------------------------------------------------------------ devices
# kzt_sql: the test's schema kzt: kzt.calls (what api records), and the
# replicas of simulated devices: kzt.replica (the rows a device holds),
# kzt.cursors (its cursor), kzt.pages (every page it pulled),
# kzt.apply(device, page) (apply one page as a client does: rows and
# tombstones in seq order; a signal page changes nothing and is returned)
kzt_sql() {
	cat <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA kzt;
CREATE TABLE kzt.calls (n serial PRIMARY KEY, label text NOT NULL, response jsonb);
CREATE TABLE kzt.replica (device text, tbl text, pk text COLLATE "C", row jsonb NOT NULL,
	PRIMARY KEY (device, tbl, pk));
CREATE TABLE kzt.cursors (device text PRIMARY KEY, cursor text NOT NULL);
CREATE TABLE kzt.pages (n serial PRIMARY KEY, device text NOT NULL, page jsonb);
CREATE FUNCTION kzt.apply(dev text, page jsonb) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	e record;
BEGIN
	INSERT INTO kzt.pages (device, page) VALUES (dev, page);
	IF jsonb_typeof(page -> 'signal') = 'object' THEN
		RETURN page -> 'signal' ->> 'type';
	END IF;
	FOR e IN
		SELECT 'row' AS kind, (x ->> 'seq')::numeric AS seq, x ->> 'table' AS tbl, x ->> 'pk' AS pk, x -> 'row' AS row
		  FROM jsonb_array_elements(page -> 'rows') x
		UNION ALL
		SELECT 'tombstone', (x ->> 'seq')::numeric, x ->> 'table', x ->> 'pk', NULL
		  FROM jsonb_array_elements(page -> 'tombstones') x
		ORDER BY 2
	LOOP
		IF e.kind = 'row' THEN
			INSERT INTO kzt.replica VALUES (dev, e.tbl, e.pk, e.row)
			ON CONFLICT (device, tbl, pk) DO UPDATE SET row = EXCLUDED.row;
		ELSE
			DELETE FROM kzt.replica WHERE device = dev AND tbl = e.tbl AND pk = e.pk;
		END IF;
	END LOOP;
	RETURN 'applied';
END
$f$;
RESET client_min_messages;
SQL
}

# sync_device DEVICE SUB BUCKETS [LIMIT] [MAXPAGES]: psql text: the device
# pulls from its cursor (kzt.cursors; "0" for a new device) until has_more
# is false, one Data API request per page, applying each page to its
# replica; its cursor is recorded, psql variable :signal is left at the
# last page's signal type (empty for none).
sync_device() {
	local dev=$1 sub=$2 buckets=$3 lim=${4:-500} max=${5:-40} i
	cat <<SQL
SELECT coalesce((SELECT cursor FROM kzt.cursors WHERE device = '$dev'), '0') AS cur \gset
\set more true
SQL
	for i in $(seq 1 "$max"); do
		cat <<SQL
\if :more
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "$sub", "role": "authenticated"}', true) IS NOT NULL AS claims_set \gset
SELECT r, r ->> 'cursor' AS cur, coalesce((r ->> 'has_more')::boolean, false) AS more
  FROM (SELECT kizunasync.pull(buckets => '$buckets', cursor => :'cur', schema_version => 1, "limit" => $lim) AS r) s \gset
COMMIT;
SELECT coalesce(nullif(kzt.apply('$dev', :'r'), 'applied'), '') AS signal \gset
\endif
SQL
	done
	cat <<SQL
INSERT INTO kzt.cursors VALUES ('$dev', :'cur') ON CONFLICT (device) DO UPDATE SET cursor = EXCLUDED.cursor;
\if :more
\echo $dev: still has_more after $max pages
\endif
SQL
}
# replica_text DEVICE TABLE: SQL giving the device's rows of TABLE, one
# "pk row" line each, ordered by pk
replica_text() {
	echo "SELECT coalesce(string_agg(pk || ' ' || row::text, E'\n' ORDER BY pk), '') FROM kzt.replica WHERE device = '$1' AND tbl = '$2'"
}
# table_text QUERY: SQL giving the rows of QUERY (columns pk text, row
# jsonb) in replica_text's form
table_text() {
	echo "SELECT coalesce(string_agg(pk || ' ' || row::text, E'\n' ORDER BY pk COLLATE \"C\"), '') FROM ($1) s"
}

# bucket sets of the history's users (see history.sh)
buckets_of() {
	echo "[{\"table\": \"notes\", \"params\": {\"owner_id\": \"$1\"}}, {\"table\": \"tasks\", \"params\": {\"owner_id\": \"$1\"}}, {\"table\": \"labels\"}]"
}
