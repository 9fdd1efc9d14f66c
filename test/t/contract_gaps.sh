#!/usr/bin/env bash
# shellcheck disable=SC2016  # SQL in single quotes is meant literally
# Issue 12 item 6: third-party auth and small contract gaps.
#   a. a text JWT "sub" (Clerk's user_..., Firebase's 28-character ids) end
#      to end: push, pull, registry, grants and tombstone delivery, ledger
#      ownership (another sub's mutation id is RLS_DENIED, as for uuids),
#      attachments; a sub longer than 255 bytes is refused (28000), one of
#      255 bytes is served;
#   b. a recorded mutation id replayed after its table was unsynced returns
#      the recorded verdict (alone and in a batch), never 22023;
#   c. schedule_jobs() refuses a client JWT (42501) as reap_tombstones()
#      does, and serves the owner and the service_role key;
#   d. row_hlc stamps do not outlive their rows: a direct DELETE in hlc mode,
#      after switching to arrival (re-provisioning), a key change, a
#      replica-mode delete repaired, unsync_table; a stale stamp never makes
#      a push lose after switching back to hlc;
#   e. sync_table warns about a table without row level security, and names
#      the actual primary key when key_columns (default {id}) is not it;
#   f. kizunasync.log_rejections = on logs which column or error made a push
#      COLUMN_DENIED or CONSTRAINT (client LOG message and the server log);
#      the verdicts on the wire stay as the corpus fixes them.
# Operational steps run as the non-superuser database owner, clients in the
# Data API shape.
T_NAME=contract_gaps
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_cg_owner}
DB=kz_t_cg
owner_role "$T_OWNER" || bail "cannot create role $T_OWNER"
owned_appdb "$DB" "$T_OWNER" || bail "cannot create database $DB"
CLERK=user_2abcDEFghiJKLmnoPQRstuVWXyz0
FIREBASE=Ab3dEf6hIj9kLm2nOp5qRs8tUv1w
DEV_C=00000000-0000-4000-8000-c0000000000c
DEV_F=00000000-0000-4000-8000-c0000000000f
mid() { printf '00000000-0000-4000-8000-f%011d' "$1"; }
docs_of() { echo "[{\"table\": \"docs\", \"params\": {\"owner_id\": \"$1\"}}]"; }

# request SUB CALL [ROLE] [CLAIMS_ROLE]: one Data API request; prints the
# response, or "ERROR <sqlstate> <message>"
request() {
	local role=${3:-authenticated} crole=${4:-authenticated}
	psql -X -q -A -t -d "$DB" -v VERBOSITY=verbose 2>&1 <<SQL | sed -n -e 's/^\(psql:[^ ]* \)\{0,1\}ERROR:  \([0-9A-Z]\{5\}\): \(.*\)/ERROR \2 \3/p' -e '/^[{[]/p' -e '/^RESULT /s/^RESULT //p' | head -n 1
\set ON_ERROR_STOP 1
BEGIN;
SET LOCAL ROLE $role;
SELECT set_config('request.jwt.claims', '{"sub": "$1", "role": "$crole"}', true) IS NULL AS x \gset
SELECT ($2)::text AS r \gset
COMMIT;
\echo RESULT :r
SQL
}
pushm() {	# pushm SUB BATCH-MUTATIONS [CLIENT]
	request "$1" "kizunasync.push(batch => '{\"mutations\": [$2]}'::jsonb, last_mutation_id => NULL, schema_version => 1, client_id => ${3:-NULL})"
}
pullj() {	# pullj SUB BUCKETS CURSOR [CLIENT]
	request "$1" "kizunasync.pull(buckets => '$2', cursor => '$3', schema_version => 1, client_id => ${4:-NULL})"
}
# jq_ JSON EXPR: EXPR over the JSON value j
jq_() { case $1 in ERROR*|'') echo "${1:-no response}"; return ;; esac; printf '%s\n' "WITH s AS (SELECT :'j'::jsonb AS j) SELECT $2 FROM s;" | q "$DB" -v j="$1" 2>&1; }
verdicts() { jq_ "$1" "(SELECT coalesce(string_agg(coalesce(v ->> 'reason', v ->> 'verdict'), ' '), '-') FROM jsonb_array_elements(j -> 'verdicts') v)"; }
vkeys() { jq_ "$1" "(SELECT string_agg(DISTINCT k, ',' ORDER BY k) FROM jsonb_array_elements(j -> 'verdicts') v, jsonb_object_keys(v) k)"; }
page() { jq_ "$1" "format('rows=%s tombstones=%s', (SELECT coalesce(string_agg(r ->> 'pk', ',' ORDER BY r ->> 'pk'), '-') FROM jsonb_array_elements(j -> 'rows') r), (SELECT coalesce(string_agg(t ->> 'pk', ',' ORDER BY t ->> 'pk'), '-') FROM jsonb_array_elements(j -> 'tombstones') t))"; }
cursor() { jq_ "$1" "j ->> 'cursor'"; }

qo "$DB" > "$T_OUT/setup.out" 2>&1 <<'SQL'
CREATE TABLE public.docs (
	id text PRIMARY KEY,
	owner_id text NOT NULL,
	body text NOT NULL CHECK (length(body) < 40),
	secret text);
ALTER TABLE public.docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.docs FOR ALL TO authenticated
	USING (owner_id = auth.jwt() ->> 'sub') WITH CHECK (owner_id = auth.jwt() ->> 'sub');
GRANT SELECT, INSERT, DELETE ON public.docs TO authenticated;
GRANT UPDATE (id, owner_id, body) ON public.docs TO authenticated;
SELECT kizunasync.sync_table('public.docs', bucket_column => 'owner_id', register_clients => true);
CREATE TABLE public.scratch (id bigint PRIMARY KEY, owner_id text NOT NULL, v text);
ALTER TABLE public.scratch ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.scratch FOR ALL TO authenticated
	USING (owner_id = auth.jwt() ->> 'sub') WITH CHECK (owner_id = auth.jwt() ->> 'sub');
GRANT SELECT, INSERT, UPDATE, DELETE ON public.scratch TO authenticated;
SELECT kizunasync.sync_table('public.scratch', bucket_column => 'owner_id');
SQL
check "setup: the owner syncs tables keyed by a text owner" "$?:$(grep -c ERROR "$T_OUT/setup.out")" "0:0"

# ------------------------------------------------------------------ a. text subs
r=$(pushm "$CLERK" "{\"mutation_id\": \"$(mid 1)\", \"table\": \"docs\", \"pk\": \"d1\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$CLERK\", \"body\": \"first\"}},
	{\"mutation_id\": \"$(mid 2)\", \"table\": \"docs\", \"pk\": \"d2\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$CLERK\", \"body\": \"second\"}}" "'$DEV_C'")
check "a: a Clerk-style sub ($CLERK) pushes two inserts" "$(verdicts "$r")" "applied applied"
r=$(pushm "$FIREBASE" "{\"mutation_id\": \"$(mid 3)\", \"table\": \"docs\", \"pk\": \"f1\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$FIREBASE\", \"body\": \"fire\"}}" "'$DEV_F'")
check "a: a Firebase-style sub ($FIREBASE, 28 characters) pushes an insert" "$(verdicts "$r")" "applied"
r=$(pullj "$CLERK" "$(docs_of "$CLERK")" 0 "'$DEV_C'")
check "a: the Clerk sub bootstraps its bucket: d1, d2" "$(page "$r")" "rows=d1,d2 tombstones=-"
CC=$(cursor "$r")
r=$(pullj "$FIREBASE" "$(docs_of "$FIREBASE")" 0 "'$DEV_F'")
check "a: the Firebase sub bootstraps its bucket: f1" "$(page "$r")" "rows=f1 tombstones=-"
r=$(pullj "$FIREBASE" "$(docs_of "$CLERK")" 0)
check "a: the Firebase sub pulling the Clerk sub's bucket gets nothing (RLS)" "$(page "$r")" "rows=- tombstones=-"
check "a: registry: both clients registered under their text subs" \
	"$(q "$DB" -c "SELECT string_agg(user_id, ' ' ORDER BY user_id) FROM kizunasync.clients WHERE client_id IN ('$DEV_C', '$DEV_F')")" "$FIREBASE $CLERK"
check "a: grants: the Clerk sub holds a grant on its bucket" \
	"$(q "$DB" -c "SELECT count(*) FROM kizunasync.bucket_grants WHERE user_id = '$CLERK' AND table_name = 'docs' AND bucket_value = '$CLERK'")" "1"
r=$(pushm "$CLERK" "{\"mutation_id\": \"$(mid 4)\", \"table\": \"docs\", \"pk\": \"d1\", \"op\": \"update\", \"columns\": {\"body\": \"first, edited\"}},
	{\"mutation_id\": \"$(mid 5)\", \"table\": \"docs\", \"pk\": \"d2\", \"op\": \"delete\"}" "'$DEV_C'")
check "a: the Clerk sub updates d1 and deletes d2" "$(verdicts "$r")" "applied applied"
r=$(pullj "$CLERK" "$(docs_of "$CLERK")" "$CC" "'$DEV_C'")
check "a: the Clerk sub's delta: d1 and the tombstone of d2" "$(page "$r")" "rows=d1 tombstones=d2"
r=$(pushm "$FIREBASE" "{\"mutation_id\": \"$(mid 4)\", \"table\": \"docs\", \"pk\": \"d1\", \"op\": \"update\", \"columns\": {\"body\": \"stolen\"}}")
check "a: ledger ownership: the Firebase sub sending the Clerk sub's mutation id gets RLS_DENIED" "$(verdicts "$r")" "RLS_DENIED"
r=$(pushm "$CLERK" "{\"mutation_id\": \"$(mid 4)\", \"table\": \"docs\", \"pk\": \"d1\", \"op\": \"update\", \"columns\": {\"body\": \"first, edited\"}}")
check "a: ... while the Clerk sub's own replay returns its recorded verdict" "$(verdicts "$r")" "applied"
# attachments: Storage objects owned by the text sub, keyed <sub>/<row key>/<file>
q "$DB" > "$T_OUT/storage.out" 2>&1 <<SQL
INSERT INTO storage.buckets (id, name) VALUES ('files', 'files');
CREATE POLICY read_own ON storage.objects FOR SELECT TO authenticated USING (owner_id = auth.jwt() ->> 'sub');
GRANT SELECT ON storage.objects TO authenticated;
INSERT INTO storage.objects (bucket_id, name, owner_id) VALUES ('files', '$CLERK/d1/a.txt', '$CLERK');
SQL
r=$(request "$CLERK" "to_jsonb(kizunasync.attachment_confirm(p_bucket => 'files', p_path => '$CLERK/d1/a.txt', p_sha256 => repeat('ab', 32), p_size => 12, p_media_type => 'text/plain', p_table => 'docs'))")
check_true "a: the Clerk sub confirms an attachment of its row d1 (got: $(printf '%s' "$r" | cut -c1-100))" test -n "$r" -a "${r#ERROR}" = "$r"
r=$(request "$CLERK" "(SELECT count(*) FROM kizunasync.attachment_metadata(p_bucket_id => 'files', p_object_path => '$CLERK/d1/a.txt'))")
check "a: ... and reads its metadata" "$r" "1"
r=$(request "$FIREBASE" "(SELECT count(*) FROM kizunasync.attachment_metadata(p_bucket_id => 'files', p_object_path => '$CLERK/d1/a.txt'))")
check "a: ... which the Firebase sub cannot" "$r" "0"
LONG=$(printf 'x%.0s' $(seq 1 256))
r=$(pullj "$LONG" "$(docs_of "$LONG")" 0)
check "a: a sub of 256 bytes is refused on pull (28000)" "$(printf '%s' "$r" | cut -d' ' -f1-2)" "ERROR 28000"
r=$(pushm "$LONG" "{\"mutation_id\": \"$(mid 6)\", \"table\": \"docs\", \"pk\": \"l1\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"x\", \"body\": \"x\"}}")
check "a: ... and on push (28000)" "$(printf '%s' "$r" | cut -d' ' -f1-2)" "ERROR 28000"
r=$(pullj "${LONG:1}" "$(docs_of "${LONG:1}")" 0)
check "a: a sub of 255 bytes is served" "$(page "$r")" "rows=- tombstones=-"

# ------------------------------------------------------------------ b. replay after unsync
# (user a, a Supabase Auth uuid sub: independent of a)
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 10)\", \"table\": \"scratch\", \"pk\": \"1\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$UA\", \"v\": \"s\"}}")
check "b: a push to table scratch is applied" "$(verdicts "$r")" "applied"
qo "$DB" -c "SELECT kizunasync.unsync_table('public.scratch')" >/dev/null 2>&1
check "b: the owner unsyncs scratch" "$?" "0"
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 10)\", \"table\": \"scratch\", \"pk\": \"1\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$UA\", \"v\": \"s\"}}")
check "b: replaying its mutation id returns the recorded verdict (not 22023)" "$(verdicts "$r")" "applied"
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 10)\", \"table\": \"scratch\", \"pk\": \"1\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$UA\", \"v\": \"s\"}},
	{\"mutation_id\": \"$(mid 11)\", \"table\": \"docs\", \"pk\": \"d3\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$UA\", \"body\": \"third\"}}")
check "b: ... also in a batch with a new mutation of a synced table" "$(verdicts "$r")" "applied applied"
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 12)\", \"table\": \"scratch\", \"pk\": \"2\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$UA\", \"v\": \"t\"}}")
check "b: a new mutation of the unsynced table is still a malformed request (22023)" "$(printf '%s' "$r" | cut -d' ' -f1-2)" "ERROR 22023"

# ------------------------------------------------------------------ c. schedule_jobs
as_owner_with_claims() {	# SQL as the owner, in a transaction with JWT claims of role $2
	local out
	out=$(psql -X -q -A -t -U "$T_OWNER" -d "$DB" -v VERBOSITY=verbose 2>&1 <<SQL | sed -n 's/^\(psql:[^ ]* \)\{0,1\}ERROR:  \([0-9A-Z]\{5\}\): .*/\2/p' | head -n 1
\set ON_ERROR_STOP 1
BEGIN;
SELECT set_config('request.jwt.claims', '{"sub": "$CLERK", "role": "$2"}', true) IS NULL AS x \gset
SELECT ($1) IS NULL AS x \gset
COMMIT;
SQL
)
	echo "${out:-ok}"
}
for f in schedule_jobs reap_tombstones; do
	r=$(request "$CLERK" "kizunasync.$f()")
	check "c: $f() under a client JWT (role authenticated) is refused: 42501" "$(printf '%s' "$r" | cut -d' ' -f1-2)" "ERROR 42501"
	check "c: $f() as the database owner with a client JWT's claims is refused: 42501" "$(as_owner_with_claims "kizunasync.$f()" authenticated)" "42501"
	check "c: $f() as the database owner without claims is served" "$(sqlstate "$DB" "$T_OWNER" "SELECT kizunasync.$f();")" "00000"
	r=$(request "$CLERK" "kizunasync.$f()" service_role service_role)
	check_true "c: $f() with the service_role key is served (got: $(printf '%s' "$r" | cut -c1-100))" test -n "$r" -a "${r#ERROR}" = "$r"
done

# ------------------------------------------------------------------ d. row_hlc
# (user a, a Supabase Auth uuid sub: independent of a)
hlc_push() {	# hlc_push MID PK OP [TITLE] HLC
	local cols=""
	[ "$3" = delete ] || cols=", \"columns\": {\"owner_id\": \"$UA\", \"title\": \"$4\"}"
	pushm "$UA" "{\"mutation_id\": \"$(mid "$1")\", \"table\": \"tasks\", \"pk\": \"$2\", \"op\": \"$3\"$cols, \"hlc\": \"$5\"}"
}
stamps() { q "$DB" -c "SELECT coalesce(string_agg(pk, ',' ORDER BY pk), '-') FROM kizunasync.row_hlc WHERE table_name = 'tasks'"; }
qo "$DB" > "$T_OUT/tasks.out" 2>&1 <<'SQL'
CREATE TABLE public.tasks (id bigint PRIMARY KEY, owner_id text NOT NULL, title text NOT NULL);
ALTER TABLE public.tasks ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.tasks FOR ALL TO authenticated
	USING (owner_id = auth.jwt() ->> 'sub') WITH CHECK (owner_id = auth.jwt() ->> 'sub');
GRANT SELECT, INSERT, UPDATE, DELETE ON public.tasks TO authenticated;
SELECT kizunasync.sync_table('public.tasks', bucket_column => 'owner_id', conflict_mode => 'hlc');
SQL
for i in 1 2 3 4 5 6; do hlc_push $((20 + i)) "$i" insert "task $i" "2024-01-01T10:00:0$i.000Z|0|dev" >/dev/null; done
check "d: hlc pushes of six tasks leave six stamps" "$(stamps)" "1,2,3,4,5,6"
qo "$DB" -c "DELETE FROM public.tasks WHERE id = 1" >/dev/null
check "d: a direct DELETE in hlc mode removes the row's stamp" "$(stamps)" "2,3,4,5,6"
qo "$DB" -c "UPDATE public.tasks SET id = 12 WHERE id = 2" >/dev/null
check "d: a key change in hlc mode removes the old key's stamp" "$(stamps)" "3,4,5,6"
q "$DB" -c "GRANT SET ON PARAMETER session_replication_role TO $T_OWNER" >/dev/null
at_finish "q postgres -c 'REVOKE SET ON PARAMETER session_replication_role FROM $T_OWNER'"
qo "$DB" > "$T_OUT/d.replica.out" 2>&1 <<SQL
SET session_replication_role = replica;
DELETE FROM public.tasks WHERE id = 3;
RESET session_replication_role;
SELECT kizunasync.repair_table('public.tasks');
SQL
check "d: a replica-mode DELETE, then repair_table (tombstone), removes the row's stamp" "$(stamps)" "4,5,6"
qo "$DB" -c "SELECT kizunasync.sync_table('public.tasks', bucket_column => 'owner_id', conflict_mode => 'arrival')" > "$T_OUT/d.arrival.out" 2>&1
check "d: the owner switches tasks to arrival (re-provisioning keeps the key and bucket: nothing reseeded)" "$(cat "$T_OUT/d.arrival.out")" "0"
qo "$DB" -c "DELETE FROM public.tasks WHERE id = 4" >/dev/null
check "d: after the switch a direct DELETE leaves no stamp of its row" "$(stamps | tr ',' '\n' | grep -c '^4$')" "0"
check "d: after the switch no stamps of the table remain at all (arrival mode keeps none)" "$(stamps)" "-"
# a push in flight while the mode switched can still leave a stamp: the reap removes it
q "$DB" -c "INSERT INTO kizunasync.row_hlc (table_name, pk, column_hlc) VALUES ('tasks', '6', '{\"title\": \"2024-01-01T11:00:00.000Z|0|dev\"}') ON CONFLICT DO NOTHING" >/dev/null
qo "$DB" -c "SELECT kizunasync.reap_tombstones()" >/dev/null
check "d: reap_tombstones() removes a stamp of a table in arrival mode" "$(stamps)" "-"
qo "$DB" -c "UPDATE public.tasks SET title = 'arrival edit' WHERE id = 5" >/dev/null
qo "$DB" -c "SELECT kizunasync.sync_table('public.tasks', bucket_column => 'owner_id', conflict_mode => 'hlc')" >/dev/null 2>&1
r=$(hlc_push 30 5 update "older clock, later arrival" "2024-01-01T09:00:00.000Z|0|dev")
check "d: back in hlc mode, a push older than the stamp task 5 had before arrival mode is applied (no stale stamp)" "$(verdicts "$r")" "applied"
qo "$DB" -c "SELECT kizunasync.unsync_table('public.tasks')" >/dev/null
check "d: unsync_table leaves no stamps of the table" "$(stamps)" "-"

# ------------------------------------------------------------------ e. sync_table checks
qo "$DB" > "$T_OUT/e.out" 2>&1 <<'SQL'
CREATE TABLE public.open_notes (id bigint PRIMARY KEY, v text);
SELECT kizunasync.sync_table('public.open_notes');
SQL
check "e: sync_table of a table without row level security warns" \
	"$(grep -c '^WARNING:  row level security is not enabled on table "open_notes"' "$T_OUT/e.out")" "1"
check "e: ... and syncs it" "$(grep -c '^0$' "$T_OUT/e.out")" "1"
psql -X -q -A -t -U "$T_OWNER" -d "$DB" -v VERBOSITY=verbose > "$T_OUT/e2.out" 2>&1 <<'SQL'
CREATE TABLE public.pairs (a int, b int, v text, PRIMARY KEY (b, a));
ALTER TABLE public.pairs ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('public.pairs');
SQL
check "e: sync_table of a table with a composite key and the default key_columns is an error" \
	"$(grep -c 'ERROR:  [0-9A-Z]\{5\}: key_columns .* are not the primary key of table "pairs"' "$T_OUT/e2.out")" "1"
check_true "e: ... that names the actual primary key (b, a): $(grep -E 'ERROR|HINT' "$T_OUT/e2.out" | tr '\n' ' ' | cut -c1-240)" \
	grep -qE 'HINT: .*\{b,a\}|HINT: .*\(b, a\)|HINT: .*"b", "a"' "$T_OUT/e2.out"

# ------------------------------------------------------------------ f. log_rejections
# (user a, a Supabase Auth uuid sub: independent of a)
reject_sql() {	# the two rejected pushes, with LOG messages sent to the client
	cat <<SQL
\\set VERBOSITY default
BEGIN;
SET LOCAL ROLE authenticated;
SET LOCAL client_min_messages = log;
SELECT set_config('request.jwt.claims', '{"sub": "$UA", "role": "authenticated"}', true) IS NULL AS x \\gset
SELECT kizunasync.push(batch => '{"mutations": [
	{"mutation_id": "$(mid "$1")", "table": "docs", "pk": "u1", "op": "update", "columns": {"secret": "s3cr3t"}},
	{"mutation_id": "$(mid "$2")", "table": "docs", "pk": "u1", "op": "update", "columns": {"body": "$(printf 'y%.0s' $(seq 1 50))"}}]}'::jsonb,
	last_mutation_id => NULL, schema_version => 1) AS r \\gset
COMMIT;
\\echo RESULT :r
SQL
}
qo "$DB" -c "INSERT INTO public.docs VALUES ('u1', '$UA', 'mine')" >/dev/null
reject_sql 40 41 | q "$DB" > "$T_OUT/f.off.out" 2>&1
check "f: by default a rejected push logs nothing" "$(grep -c '^LOG:' "$T_OUT/f.off.out")" "0"
check "f: the verdicts: COLUMN_DENIED, CONSTRAINT" "$(verdicts "$(sed -n 's/^RESULT //p' "$T_OUT/f.off.out")")" "COLUMN_DENIED CONSTRAINT"
q postgres -c "ALTER DATABASE $DB SET kizunasync.log_rejections = on" >/dev/null
log=$(q postgres -c "SELECT setting FROM pg_settings WHERE name = 'data_directory'")/../postgres.log
lines0=$(wc -l < "$log" 2>/dev/null || echo 0)
reject_sql 42 43 | q "$DB" > "$T_OUT/f.on.out" 2>&1
check_true "f: with log_rejections = on (superuser, per database) the client sees why COLUMN_DENIED: column \"secret\"" \
	grep -qE "^LOG: .*$(mid 42).*COLUMN_DENIED" "$T_OUT/f.on.out"
check_true "f: ... the LOG names the column" grep -qE '^DETAIL: .*secret' "$T_OUT/f.on.out"
check_true "f: ... and why CONSTRAINT: the check constraint docs_body_check" \
	grep -qE "^LOG: .*$(mid 43).*CONSTRAINT" "$T_OUT/f.on.out"
check_true "f: ... the LOG names the error (23514, docs_body_check)" grep -qE '^DETAIL: +23514: .*docs_body_check' "$T_OUT/f.on.out"
on=$(sed -n 's/^RESULT //p' "$T_OUT/f.on.out")
check "f: the wire is unchanged: the same verdicts" "$(verdicts "$on")" "COLUMN_DENIED CONSTRAINT"
check "f: ... with the corpus's keys only (mutation_id, reason, server_row, verdict)" "$(vkeys "$on")" "mutation_id,reason,server_row,verdict"
if [ -r "$log" ]; then
	check_true "f: the server log has both reasons" test "$(tail -n +"$((lines0 + 1))" "$log" | grep -cE "$(mid 42).*COLUMN_DENIED|$(mid 43).*CONSTRAINT")" -eq 2
else
	skip "f: the server log has both reasons" "no server log at $log (the cluster is not scripts/cluster.sh's)"
fi
q postgres -c "ALTER DATABASE $DB RESET kizunasync.log_rejections" >/dev/null

finish
