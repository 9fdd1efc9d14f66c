#!/usr/bin/env bash
# shellcheck disable=SC2016  # SQL in single quotes is meant literally
# Issue 12 item 5 (decisions/0083): a pull that can make no progress because
# a writer of the bucket holds its transaction open waits (at most
# pull_wait_ms) instead of answering at once, so a client that follows "keep
# pulling while has_more is true" makes a bounded number of requests.
#   a. a client looping on has_more (same cursor back, no rows) against a
#      held writer: at most about seconds / pull_wait_ms + 1 pulls with the
#      default (2000 ms) and with configure(pull_wait_ms => 500), and about
#      that many (it waits what it is told); with pull_wait_ms => 0 it is the
#      request storm of the issue (the measurement can see one);
#   b. a waiting pull returns as soon as the holder commits, with the row;
#   c. statement_timeout and a cancel end a waiting pull (57014) at once;
#   d. a READ ONLY (GET-style) pull waits and returns at the commit too; a
#      REPEATABLE READ pull does not wait (its snapshot cannot change); a
#      GET pull that has to record something (a bucket grant) is refused
#      clearly (KZL03, retry with POST).
# The owner configures, clients pull in the Data API shape.  Timings are
# wall-clock on a shared machine: the bounds leave room for load.
T_NAME=long_poll
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_lp_owner}
DB=kz_t_lp
owner_role "$T_OWNER" || bail "cannot create role $T_OWNER"
owned_appdb "$DB" "$T_OWNER" || bail "cannot create database $DB"
BA="[{\"table\": \"feed\", \"params\": {\"owner_id\": \"$UA\"}}]"
CLAIMS="SELECT set_config('request.jwt.claims', '{\"sub\": \"$UA\", \"role\": \"authenticated\"}', true) IS NULL AS x \\gset"

qo "$DB" > "$T_OUT/setup.out" 2>&1 <<SQL
CREATE TABLE public.feed (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text NOT NULL);
ALTER TABLE public.feed ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.feed FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.feed TO authenticated;
INSERT INTO public.feed VALUES (1, '$UA', 'one');
SELECT kizunasync.sync_table('public.feed', bucket_column => 'owner_id');
SQL
check "setup: the owner syncs its table" "$?:$(grep -c ERROR "$T_OUT/setup.out")" "0:0"
configure() { qo "$DB" -c "SELECT kizunasync.configure(pull_wait_ms => $1) ->> 'pull_wait_ms'" 2>&1; }
# pull CURSOR: one Data API pull; prints "rows=N has_more=B|cursor"
pull() {
	q "$DB" <<SQL
$(api pull "$UA" "kizunasync.pull(buckets => '$BA', cursor => '$1', schema_version => 1)")
SELECT format('rows=%s has_more=%s', jsonb_array_length(:'r'::jsonb -> 'rows'), :'r'::jsonb ->> 'has_more'), :'r'::jsonb ->> 'cursor';
SQL
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b - a}'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a <= b)}'; }
# within A B C: A <= B <= C
within() { le "$1" "$2" && le "$2" "$3"; }

# the held writer: a change of user a's bucket in flight, and a later one
# committed, so the cursor gets a hole
CUR0=$(pull 0 | sed 's/^[^|]*|//')
sess_open holder "$DB" "$T_OWNER"
sess_send holder "BEGIN; INSERT INTO public.feed VALUES (2, '$UA', 'held');"
sess_sync holder
qo "$DB" -c "INSERT INTO public.feed VALUES (3, '$UA', 'committed')" >/dev/null
first=$(pull "$CUR0")
HOLED=${first#*|}
check "setup: with a writer holding its transaction, a pull delivers what committed and a holed cursor, has_more" \
	"$(printf '%s' "${first%%|*} ")$(printf '%s' "$HOLED" | grep -c '~')" "rows=1 has_more=true 1"

# ------------------------------------------------------------------ a. the loop
# loop SECONDS: a client pulling from $HOLED while has_more is true and the
# time lasts (at most 400 requests), each a Data API request; it echoes
# "pulls=N same=B" (same: every answer had no rows and the cursor back)
{
	cat <<SQL
SELECT clock_timestamp() + make_interval(secs => :secs) AS deadline \\gset
\\set go true
\\set n 0
\\set same true
SQL
	block=$(cat <<SQL
\\if :go
BEGIN;
SET LOCAL ROLE authenticated;
$CLAIMS
SELECT kizunasync.pull(buckets => '$BA', cursor => :'cur', schema_version => 1) AS r \\gset
COMMIT;
SELECT :n + 1 AS n, :'same' AND jsonb_array_length(:'r'::jsonb -> 'rows') = 0 AND :'r'::jsonb ->> 'cursor' = :'cur' AS same,
	clock_timestamp() < :'deadline'::timestamptz AND (:'r'::jsonb ->> 'has_more')::boolean AS go \\gset
\\endif
SQL
)
	for _ in $(seq 1 400); do printf '%s\n' "$block"; done
	echo "\\echo pulls=:n same=:same"
} > "$T_OUT/loop.sql"
loop() { q "$DB" -v secs="$1" -v cur="$HOLED" -f "$T_OUT/loop.sql"; }
# run_loop NAME LABEL SECONDS MIN MAX: the loop for SECONDS (output in
# loop.NAME.out); checks that it made
# MIN to MAX pulls (MAX empty: no upper bound) and that every answer had no
# rows and the cursor back
run_loop() {
	local t0 t1 n out=$T_OUT/loop.$1.out
	shift
	t0=$(date +%s.%N)
	loop "$2" > "$out" 2>&1
	t1=$(date +%s.%N)
	n=$(sed -n 's/^pulls=\([0-9]*\) .*/\1/p' "$out")
	check_true "a: $1: the client makes $n pulls in $2 s ($(secs "$t0" "$t1") s): $3 to ${4:-any number}" \
		test "${n:-0}" -ge "$3" -a "${n:-999999}" -le "${4:-999999}"
	check "a: ... every answer: no rows, the same cursor back" "$(sed -n 's/^pulls=[0-9]* //p' "$out")" "same=t"
}
run_loop default "with the default pull_wait_ms (2000, at most 4 / 2 + 1)" 4 2 3
got=$(configure 0)
run_loop 0ms "with pull_wait_ms => 0 (configure returned ${got:-nothing}) the client storms (the script stops at 400)" 1 21
got=$(configure 500)
run_loop 500ms "with configure(pull_wait_ms => 500) (returned ${got:-nothing}; at most 3 / 0.5 + 1)" 3 4 7

# ------------------------------------------------------------------ b. the commit ends the wait
# waiting_pull NAME [BEGIN]: start a pull from the holed cursor in a
# background session (BEGIN: how its transaction starts)
waiting_pull() {
	sess_open "$1" "$DB"
	sess_send "$1" "\\set VERBOSITY verbose
${2:-BEGIN};
SET LOCAL ROLE authenticated;
$CLAIMS
SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset
SELECT kizunasync.pull(buckets => '$BA', cursor => '$HOLED', schema_version => 1) AS r \\gset
SELECT extract(epoch FROM clock_timestamp()) AS t1 \\gset
COMMIT;
\\echo RESULT :t0 :t1 :r"
}
result() { sed -n 's/^RESULT //p' "$T_OUT/sess.$1.out"; }
# commit_holder ID: the holder commits (prints the commit's epoch) and holds
# row ID next; a later row (ID + 100) commits; the client's cursor moves on
# to a new holed one (a pull that makes progress, so it does not wait)
commit_holder() {
	sess_send holder "COMMIT;
SELECT extract(epoch FROM clock_timestamp());
BEGIN; INSERT INTO public.feed VALUES ($1, '$UA', 'held $1');"
	sess_sync holder
	grep -E '^[0-9]+\.[0-9]+$' "$T_OUT/sess.holder.out" | tail -n 1
	qo "$DB" -c "INSERT INTO public.feed VALUES ($(($1 + 100)), '$UA', 'committed')" >/dev/null
}
rehole() { HOLED=$(pull "$HOLED" | sed 's/^[^|]*|//'); }

got=$(configure 5000)
waiting_pull client1
sleep 0.8
tc=$(commit_holder 4)
sess_sync client1; sess_close client1
read -r a0 a1 ar < <(result client1)
check_true "b: with pull_wait_ms => 5000 (returned ${got:-nothing}) a pull against the held writer waits for it ($(secs "${a0:-0}" "${a1:-0}") s, at least 0.6 s)" \
	le 0.6 "$(secs "${a0:-0}" "${a1:-0}")"
check_true "b: ... and returns as soon as the holder commits ($(secs "${tc:-0}" "${a1:-0}") s after the commit, at most 0.6 s)" \
	within 0 "$(secs "${tc:-0}" "${a1:-0}")" 0.6
check "b: ... with the held row" "$(printf '%s' "$ar" | grep -c '"v": "held"')" "1"
rehole

# ------------------------------------------------------------------ c. timeout, cancel
t0=$(date +%s.%N)
st=$(sqlstate "$DB" postgres "BEGIN;
SET LOCAL ROLE authenticated;
SET LOCAL statement_timeout = '300ms';
$CLAIMS
SELECT kizunasync.pull(buckets => '$BA', cursor => '$HOLED', schema_version => 1);
COMMIT;")
t1=$(date +%s.%N)
check "c: statement_timeout (300 ms) ends a waiting pull at once: 57014 within 1.5 s ($(secs "$t0" "$t1") s)" \
	"${st%% *} $(le "$(secs "$t0" "$t1")" 1.5 && echo fast || echo slow)" "57014 fast"
waiting_pull client2
sleep 0.5
t0=$(date +%s.%N)
q "$DB" -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'kz_t_client2'" > /dev/null
sess_sync client2; sess_close client2
t1=$(date +%s.%N)
check "c: a cancel (pg_cancel_backend) ends a waiting pull at once: 57014 within 1 s ($(secs "$t0" "$t1") s)" \
	"$(grep -o 'ERROR:  [0-9A-Z]\{5\}' "$T_OUT/sess.client2.out" | head -n 1) $(le "$(secs "$t0" "$t1")" 1 && echo fast || echo slow)" "ERROR:  57014 fast"

# ------------------------------------------------------------------ d. GET-style, REPEATABLE READ
waiting_pull client3 "BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY"
sleep 0.8
tc=$(commit_holder 5)
sess_sync client3; sess_close client3
read -r a0 a1 ar < <(result client3)
check "d: a READ ONLY (GET-style) pull succeeds" "$(grep -c ERROR "$T_OUT/sess.client3.out")" "0"
check_true "d: ... waits for the held writer ($(secs "${a0:-0}" "${a1:-0}") s, at least 0.6 s)" le 0.6 "$(secs "${a0:-0}" "${a1:-0}")"
check_true "d: ... and returns as soon as it commits ($(secs "${tc:-0}" "${a1:-0}") s after, at most 0.6 s)" within 0 "$(secs "${tc:-0}" "${a1:-0}")" 0.6
check "d: ... with the held row" "$(printf '%s' "$ar" | grep -c '"v": "held 4"')" "1"
rehole
waiting_pull client4 "BEGIN ISOLATION LEVEL REPEATABLE READ"
sess_sync client4; sess_close client4
read -r a0 a1 ar < <(result client4)
check_true "d: a REPEATABLE READ pull does not wait ($(secs "${a0:-0}" "${a1:-0}") s, at most 0.3 s; its snapshot cannot see the commit)" \
	le "$(secs "${a0:-0}" "${a1:-0}")" 0.3
sess_send holder "COMMIT;"; sess_sync holder; sess_close holder
# a GET pull that has something to record (user b's first rows: a bucket
# grant) cannot write in its read-only transaction: KZL03, retry with POST
# (decisions/0085)
qo "$DB" -c "INSERT INTO public.feed VALUES (50, '$UB', 'b')" >/dev/null
out=$(psql -X -q -A -t -d "$DB" -v VERBOSITY=verbose 2>&1 <<SQL
BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "$UB", "role": "authenticated"}', true) IS NULL AS x \gset
SELECT kizunasync.pull(buckets => '[{"table": "feed", "params": {"owner_id": "$UB"}}]', cursor => '0', schema_version => 1);
COMMIT;
SQL
)
check "d: a READ ONLY (GET) pull that must record a bucket grant fails with KZL03" \
	"$(printf '%s\n' "$out" | sed -n 's/.*ERROR:  \([0-9A-Z]\{5\}\): .*/\1/p' | head -n 1)" "KZL03"
check_true "d: ... saying to retry with POST on the primary" grep -q 'HINT:  Retry the same request on the primary.*POST' <<< "$out"

finish
