#!/usr/bin/env bash
# Crash safety of push (issue 7): SIGKILL a backend in the middle of a large
# push, let the postmaster recover (a killed backend makes it reset every
# backend and replay WAL), then check that
#   1. an atomic batch left nothing behind (rows, verdicts, client record);
#   2. a non-atomic batch left nothing behind either (its units commit with
#      the call, not one by one);
#   3. the ledger and the rows agree: every applied insert's row exists, every
#      applied delete's row is gone, and every row has an applied insert;
#   4. a bootstrap pull (all pages) equals the table;
#   5. a pull from a cursor taken before the crash closes: the seqs the killed
#      transactions drew become dropped holes, the cursor ends without holes;
#   6. a writer killed while holding a seq (open transaction) leaves a hole
#      that a later pull drops, and the committed write after it arrives;
#   7. amcheck finds nothing wrong with the bookkeeping tables and indexes
#      (test/tools/amcheck.sh; issue 21 item 4), and its self-test fires.
# Each check is one pass or fail; the summary line "crash <passed> <failed> 0"
# is appended to $KZ_RESULTS when set (scripts/test.sh lane "crash").
#
# Needs the cluster environment (PGHOST, PGPORT, PGUSER) and the extension
# installed; runs as root (it SIGKILLs a backend owned by postgres).  Uses
# its own database kz_crash.  Takes about half a minute.
set -uo pipefail
DB=kz_crash
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
UA=00000000-0000-4000-8000-a10000000001
CLAIMS="{\"sub\": \"$UA\", \"role\": \"authenticated\"}"
pass=0 fail=0

ok() { echo "ok - $1"; pass=$((pass + 1)); }
notok() { echo "not ok - $1"; [ -n "${2:-}" ] && echo "#   $2"; fail=$((fail + 1)); }
# check "description" "got" "want"
check() { if [ "$2" = "$3" ]; then ok "$1"; else notok "$1" "got '$2', want '$3'"; fi; }
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

wait_ready() {
	local i
	for i in $(seq 1 120); do
		if psql -X -q -A -t -d "$DB" -c 'SELECT 1' >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	return 1
}

# SIGKILL the backend whose application_name is $1, once the progress
# sequence has reached $2 (rows through the slow trigger)
kill_when() {
	local app=$1 at=$2 pid="" n i
	for i in $(seq 1 400); do
		n=$(q -c "SELECT last_value FROM crash.progress" 2>/dev/null || echo 0)
		pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$app' AND state = 'active'" 2>/dev/null || true)
		if [ -n "$pid" ] && [ "${n:-0}" -ge "$at" ]; then break; fi
		sleep 0.05
	done
	if [ -z "$pid" ]; then echo "!! no active backend for $app"; return 1; fi
	echo "# SIGKILL backend $pid ($app) after $n rows"
	kill -9 "$pid"
}

# a push of N inserts (ids from FIRST) as user a, run by psql as application $1
push_batch() {
	local app=$1 atomic=$2 first=$3 n=$4 tag=$5
	PGAPPNAME=$app psql -X -q -A -t -d "$DB" <<SQL
SELECT set_config('request.jwt.claims', '$CLAIMS', false) IS NULL;
SET ROLE authenticated;
SELECT kizunasync.push((SELECT jsonb_build_object('atomic', $atomic, 'mutations', jsonb_agg(jsonb_build_object(
		'mutation_id', '00000000-0000-4000-8000-' || '$tag' || lpad(i::text, 10, '0'),
		'table', 'crash_items', 'pk', i::text, 'op', 'insert',
		'columns', jsonb_build_object('owner_id', '$UA', 'v', 'v' || i)) ORDER BY i))
	FROM generate_series($first, $first + $n - 1) i), NULL, 1, '00000000-0000-4000-8000-c00000000001') -> 'verdicts' -> 0 ->> 'verdict';
SQL
}

# pull every page from cursor $1 as user a (at most 200 pages); prints
# "<row ids, comma-separated>|<final cursor>|<pages>"
pull_all() {
	q <<SQL
SELECT set_config('request.jwt.claims', '$CLAIMS', false) IS NULL;
SET ROLE authenticated;
DO \$\$
DECLARE
	cur text := '$1';
	r jsonb;
	ids bigint[] := '{}';
	pages int := 0;
BEGIN
	LOOP
		r := kizunasync.pull('[{"table": "crash_items", "params": {"owner_id": "$UA"}}]', cur, 1, 400);
		pages := pages + 1;
		ids := ids || ARRAY(SELECT (x -> 'row' ->> 'id')::bigint FROM jsonb_array_elements(r -> 'rows') x);
		ids := ARRAY(SELECT i FROM unnest(ids) i WHERE i::text NOT IN
			(SELECT t ->> 'pk' FROM jsonb_array_elements(r -> 'tombstones') t));
		cur := r ->> 'cursor';
		EXIT WHEN NOT (r -> 'has_more')::boolean OR pages >= 200;
	END LOOP;
	PERFORM set_config('crash.out', (SELECT coalesce(string_agg(DISTINCT i::text, ',' ORDER BY i::text), '') FROM unnest(ids) i)
		|| '|' || cur || '|' || pages, false);
END \$\$;
SELECT current_setting('crash.out');
SQL
}

echo "== crash: setup ($DB)"
dropdb --if-exists "$DB" >/dev/null 2>&1
createdb "$DB"
psql -X -q -d "$DB" -f "$ROOT/test/setup/standins.sql" >/dev/null
q >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION kizunasync;
CREATE SCHEMA crash;
CREATE SEQUENCE crash.progress;
GRANT USAGE ON SCHEMA crash TO authenticated;
GRANT USAGE ON SEQUENCE crash.progress TO authenticated;
CREATE TABLE public.crash_items (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text);
ALTER TABLE public.crash_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.crash_items FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.crash_items TO authenticated;
-- slow rows: 10 ms each, counted in a sequence (visible before commit)
CREATE FUNCTION crash.slow() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	PERFORM nextval('crash.progress');
	IF NEW.v LIKE 'v%' AND NEW.id < 100000 THEN PERFORM pg_sleep(0.01); END IF;
	RETURN NEW;
END \$\$;
CREATE TRIGGER slow BEFORE INSERT ON public.crash_items FOR EACH ROW EXECUTE FUNCTION crash.slow();
SELECT kizunasync.sync_table('public.crash_items', bucket_column => 'owner_id', register_clients => true);
SELECT kizunasync.configure(max_batch_size => 1000, require_atomic => false) IS NOT NULL AS configured;
SQL

# committed baseline: 40 rows pushed, 10 of them deleted by push
push_batch kz_crash_base true 100001 40 b1 >/dev/null
q >/dev/null <<SQL
SELECT set_config('request.jwt.claims', '$CLAIMS', false);
SET ROLE authenticated;
SELECT kizunasync.push((SELECT jsonb_build_object('mutations', jsonb_agg(jsonb_build_object(
	'mutation_id', '00000000-0000-4000-8000-b2' || lpad(i::text, 10, '0'), 'table', 'crash_items',
	'pk', i::text, 'op', 'delete')))
	FROM generate_series(100001, 100010) i), NULL, 1);
SQL
precrash=$(pull_all 0 | tail -1)
precrash_cursor=$(echo "$precrash" | cut -d'|' -f2)
check "baseline: a bootstrap pull sees the 30 live rows" "$(echo "$precrash" | cut -d'|' -f1 | tr ',' '\n' | grep -c .)" 30
client_before=$(q -c "SELECT last_mutation_id FROM kizunasync.clients WHERE client_id = '00000000-0000-4000-8000-c00000000001'")

for mode in atomic non-atomic; do
	if [ $mode = atomic ]; then atomic=true; first=1; tag=a1; else atomic=false; first=1001; tag=a2; fi
	echo "== crash: SIGKILL during an $mode push of 500 inserts"
	q -c "SELECT setval('crash.progress', 1, false)" >/dev/null
	push_batch "kz_crash_$mode" $atomic $first 500 $tag >/tmp/kz_crash_$$.out 2>&1 &
	bg=$!
	if kill_when "kz_crash_$mode" 150; then ok "$mode: the push was killed mid-batch"; else notok "$mode: the push was killed mid-batch"; fi
	wait $bg
	check "$mode: the client saw the connection die, not a result" \
		"$(grep -q 'terminated abnormally\|server closed the connection' /tmp/kz_crash_$$.out && echo died)" died
	if wait_ready; then ok "$mode: the cluster recovered after the kill"; else notok "$mode: the cluster recovered after the kill"; continue; fi
	check "$mode: no row of the killed batch exists" \
		"$(q -c "SELECT count(*) FROM public.crash_items WHERE id BETWEEN $first AND $first + 499")" 0
	check "$mode: no verdict of the killed batch was recorded" \
		"$(q -c "SELECT count(*) FROM kizunasync.verdicts WHERE mutation_id::text LIKE '00000000-0000-4000-8000-${tag}%'")" 0
	check "$mode: no changelog entry of the killed batch survives" \
		"$(q -c "SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'crash_items' AND pk::bigint BETWEEN $first AND $first + 499")" 0
	check "$mode: the client record is as before" \
		"$(q -c "SELECT last_mutation_id FROM kizunasync.clients WHERE client_id = '00000000-0000-4000-8000-c00000000001'")" "$client_before"
done
rm -f /tmp/kz_crash_$$.out

echo "== crash: ledger, rows and pulls after recovery"
check "ledger and rows agree (applied inserts minus applied deletes = the table)" \
	"$(q -c "SELECT (SELECT string_agg(pk, ',' ORDER BY pk) FROM (
			SELECT ltrim(right(mutation_id::text, 10), '0') AS pk FROM kizunasync.verdicts WHERE reason IS NULL
			   AND mutation_id::text LIKE '00000000-0000-4000-8000-b1%'
			EXCEPT
			SELECT ltrim(right(mutation_id::text, 10), '0') FROM kizunasync.verdicts WHERE reason IS NULL
			   AND mutation_id::text LIKE '00000000-0000-4000-8000-b2%') s)
		  = (SELECT string_agg(id::text, ',' ORDER BY id::text) FROM public.crash_items)")" t
table_ids=$(q -c "SELECT string_agg(id::text, ',' ORDER BY id::text) FROM public.crash_items")
check "the committed rows survived (30)" "$(q -c "SELECT count(*) FROM public.crash_items")" 30
boot=$(pull_all 0 | tail -1)
check "a bootstrap pull after the crash equals the table" "$(echo "$boot" | cut -d'|' -f1)" "$table_ids"
from_old=$(pull_all "$precrash_cursor" | tail -1)
check "a pull from the pre-crash cursor closes without holes" \
	"$(echo "$from_old" | cut -d'|' -f2 | grep -c '~')" 0
check "and delivers nothing of the killed batches" "$(echo "$from_old" | cut -d'|' -f1)" ""
# a committed write after the crash reaches that puller
push_batch kz_crash_after true 100100 1 b3 >/dev/null
after=$(pull_all "$(echo "$from_old" | cut -d'|' -f2)" | tail -1)
check "a write committed after the crash is delivered" "$(echo "$after" | cut -d'|' -f1)" 100100
# (the seqs a killed transaction drew may be drawn again after recovery:
# its sequence WAL was never flushed.  That is harmless: every seq below a
# committed one is durable, so a reissued seq lies above every high-water.)
check "that pull's cursor has no holes and covers the new write" \
	"$(echo "$after" | cut -d'|' -f2 | grep -c '~')/$(q -c "SELECT $(echo "$after" | cut -d'|' -f2 | cut -d'~' -f1) >= seq FROM kizunasync.changelog WHERE table_name = 'crash_items' AND pk = '100100'")" "0/t"

echo "== crash: SIGKILL of a writer holding a seq"
# the holder inserts a row (drawing a seq) and sleeps in its open transaction
PGAPPNAME=kz_crash_holder psql -X -q -d "$DB" >/dev/null 2>&1 <<SQL &
BEGIN;
INSERT INTO public.crash_items VALUES (200001, '$UA', 'held');
SELECT pg_sleep(120);
COMMIT;
SQL
holder=$!
for i in $(seq 1 100); do
	[ -n "$(q -c "SELECT 1 FROM pg_stat_activity WHERE application_name = 'kz_crash_holder' AND query LIKE '%pg_sleep%'")" ] && break
	sleep 0.1
done
# a later write commits above the held seq
q -c "INSERT INTO public.crash_items VALUES (200002, '$UA', 'later')" >/dev/null
cur0=$(echo "$after" | cut -d'|' -f2)
held=$(q <<SQL | tail -1
SELECT set_config('request.jwt.claims', '$CLAIMS', false) IS NULL;
SET ROLE authenticated;
SELECT (r ->> 'cursor') || '|' || (r ->> 'has_more') || '|' ||
	   (SELECT coalesce(string_agg(x -> 'row' ->> 'id', ','), '') FROM jsonb_array_elements(r -> 'rows') x)
  FROM kizunasync.pull('[{"table": "crash_items", "params": {"owner_id": "$UA"}}]', '$cur0', 1, 400) r;
SQL
)
check "while the seq is held, the pull reports a hole and has_more" \
	"$(echo "$held" | cut -d'|' -f2)/$(echo "$held" | cut -d'|' -f1 | grep -c '~')" "true/1"
hpid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'kz_crash_holder'")
echo "# SIGKILL holder backend $hpid"
kill -9 "$hpid"
wait $holder
if wait_ready; then ok "held seq: the cluster recovered"; else notok "held seq: the cluster recovered"; fi
closed=$(pull_all "$(echo "$held" | cut -d'|' -f1)" | tail -1)
check "a later pull drops the dead hole (cursor without holes)" "$(echo "$closed" | cut -d'|' -f2 | grep -c '~')" 0
check "the held row never arrives, the committed one did" \
	"$(echo "$held" | cut -d'|' -f3)/$(echo "$closed" | cut -d'|' -f1)/$(q -c "SELECT count(*) FROM public.crash_items WHERE id = 200001")" "200002//0"

echo "== crash: amcheck on the bookkeeping after the crash recoveries"
# PostgreSQL's own checks (issue 21 item 4): the killed pushes wrote the
# bookkeeping with direct heap and index access; after recovery every table
# and index of schema kizunasync must verify (test/tools/amcheck.sh), and
# the check must fire on a planted mismatch (its negative control)
am_t0=$SECONDS
if am_out=$(bash "$ROOT/test/tools/amcheck.sh" "$DB" 2>&1); then
	ok "amcheck: the bookkeeping verifies after recovery ($(echo "$am_out" | tail -1 | sed 's/^amcheck: //'))"
else
	notok "amcheck: the bookkeeping verifies after recovery" "$(echo "$am_out" | grep -v '^ok ' | tr '\n' ' ')"
fi
if am_out=$(bash "$ROOT/test/tools/amcheck.sh" --self-test 2>&1); then
	ok "amcheck: the check reports a planted index mismatch (negative control)"
else
	notok "amcheck: the check reports a planted index mismatch (negative control)" "$(echo "$am_out" | tr '\n' ' ')"
fi
echo "# amcheck took $((SECONDS - am_t0)) s"

echo "crash: $pass passed, $fail failed"
[ -n "${KZ_RESULTS:-}" ] && echo "crash $pass $fail 0" >> "$KZ_RESULTS"
dropdb --if-exists "$DB" >/dev/null 2>&1 || true
[ "$fail" -eq 0 ]
