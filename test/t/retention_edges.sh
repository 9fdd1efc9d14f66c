#!/usr/bin/env bash
# shellcheck disable=SC2016  # SQL in single quotes is meant literally
# Issue 23 items 4 and 9: retention at the edges of real deployments.
#   a. (item 4) prune_clients() run by the non-superuser database owner, as
#      pg_cron runs it, removes no bucket grant: a third-party sub (Clerk's
#      user_...), a Supabase Auth user in auth.users and a uuid sub that
#      auth.users does not have (a deleted Supabase user, or a Cognito
#      user: third-party uuids) each still get the tombstone of a row their
#      device holds, deleted after the prune; stale clients and old
#      verdicts are still pruned.
#   b. (item 9) what one user can make the ledger store: 20 pushes of 500
#      updates to a table it may only SELECT store nothing (COLUMN_DENIED,
#      decided from privileges before any write, is not recorded; its
#      replay answers the same); 20 pushes of 500 updates of another
#      user's row (RLS_DENIED) keep at most 1000 of the user's rejections;
#      an id repeated in one batch still replays its first occurrence when
#      that was an unrecorded COLUMN_DENIED;
#      exactly-once still holds for everything that wrote (a replayed
#      increment does not apply twice, also after the flood) and for
#      another user's recorded rejection (PRECONDITION).
#   c. a device that bootstraps after a reap removed the newest entry of the
#      database (and VACUUM the tombstone) gets a cursor at the reap
#      horizon, which its next pull serves: never CHECKPOINT_EXPIRED again
#      and again.
# Operational steps run as the non-superuser database owner, clients in the
# Data API shape (one transaction, SET LOCAL ROLE authenticated, the claims
# transaction-local, named arguments).
T_NAME=retention_edges
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_re_owner}
DB=kz_t_re
owner_role "$T_OWNER" || bail "cannot create role $T_OWNER"
owned_appdb "$DB" "$T_OWNER" || bail "cannot create database $DB"
CLERK=user_2abcDEFghiJKLmnoPQRstuVWXyz0
SUPA=00000000-0000-4000-8000-a100000000a1	# in auth.users
GONE=00000000-0000-4000-8000-a100000000a2	# a uuid sub auth.users does not have
HOSTILE=user_2hostileHOSTILEhostile000
mid() { printf '00000000-0000-4000-8000-f%011d' "$1"; }
docs_of() { echo "[{\"table\": \"docs\", \"params\": {\"owner_id\": \"$1\"}}]"; }

pushm() {	# pushm SUB BATCH-MUTATIONS
	request "$1" "kizunasync.push(batch => '{\"mutations\": [$2]}'::jsonb, last_mutation_id => NULL, schema_version => 1)"
}
# pushgen SUB FIRST-MUTATION-NUMBER TABLE PK: one push of 500 updates of
# row PK of TABLE, mutation ids FIRST .. FIRST+499 (the batch is built by
# the request, as a client would send it)
pushgen() {
	request "$1" "kizunasync.push(batch => (SELECT jsonb_build_object('mutations', jsonb_agg(jsonb_build_object(
		'mutation_id', format('00000000-0000-4000-8000-f%s', lpad(($2 + i)::text, 11, '0')),
		'table', '$3', 'pk', '$4', 'op', 'update', 'columns', jsonb_build_object('body', 'x' || i)) ORDER BY i))
		FROM generate_series(0, 499) i), last_mutation_id => NULL, schema_version => 1)"
}
pullj() {	# pullj SUB BUCKETS CURSOR
	request "$1" "kizunasync.pull(buckets => '$2', cursor => '$3', schema_version => 1)"
}
jq_() { case $1 in ERROR*|'') echo "${1:-no response}"; return ;; esac; printf '%s\n' "WITH s AS (SELECT :'j'::jsonb AS j) SELECT $2 FROM s;" | q "$DB" -v j="$1" 2>&1; }
verdicts() { jq_ "$1" "(SELECT coalesce(string_agg(coalesce(v ->> 'reason', v ->> 'verdict'), ' '), '-') FROM jsonb_array_elements(j -> 'verdicts') v)"; }
vcount() { jq_ "$1" "(SELECT coalesce(string_agg(k || '=' || n, ' ' ORDER BY k), '-') FROM (SELECT coalesce(v ->> 'reason', v ->> 'verdict') k, count(*) n FROM jsonb_array_elements(j -> 'verdicts') v GROUP BY 1) c)"; }
page() { jq_ "$1" "format('rows=%s tombstones=%s', (SELECT coalesce(string_agg(r ->> 'pk', ',' ORDER BY r ->> 'pk'), '-') FROM jsonb_array_elements(j -> 'rows') r), (SELECT coalesce(string_agg(t ->> 'pk', ',' ORDER BY t ->> 'pk'), '-') FROM jsonb_array_elements(j -> 'tombstones') t))"; }
cursor() { jq_ "$1" "j ->> 'cursor'"; }
ledger_of() { q "$DB" -c "SELECT count(*) FROM kizunasync.verdicts WHERE user_id = '$1'"; }

qo "$DB" > "$T_OUT/setup.out" 2>&1 <<'SQL'
CREATE TABLE public.docs (
	id text PRIMARY KEY,
	owner_id text NOT NULL,
	body text NOT NULL,
	n integer NOT NULL DEFAULT 0);
ALTER TABLE public.docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.docs FOR ALL TO authenticated
	USING (owner_id = auth.jwt() ->> 'sub') WITH CHECK (owner_id = auth.jwt() ->> 'sub');
GRANT SELECT, INSERT, UPDATE, DELETE ON public.docs TO authenticated;
SELECT kizunasync.sync_table('public.docs', bucket_column => 'owner_id');
-- a table users may only read
CREATE TABLE public.notices (id text PRIMARY KEY, owner_id text NOT NULL, body text NOT NULL);
ALTER TABLE public.notices ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.notices FOR SELECT TO authenticated USING (owner_id = auth.jwt() ->> 'sub');
GRANT SELECT ON public.notices TO authenticated;
SELECT kizunasync.sync_table('public.notices', bucket_column => 'owner_id');
INSERT INTO public.notices VALUES ('n1', 'user_2hostileHOSTILEhostile000', 'read me');
SQL
check "setup: the owner syncs docs (users write their own rows) and notices (users may only read)" \
	"$?:$(grep -c ERROR "$T_OUT/setup.out")" "0:0"
q "$DB" -c "INSERT INTO auth.users (id) VALUES ('$SUPA')" >/dev/null

# ------------------------------------------------------------------ a. grants survive prune_clients
declare -A CUR
i=0
for u in "$CLERK" "$SUPA" "$GONE"; do
	i=$((i + 1))
	r=$(pushm "$u" "{\"mutation_id\": \"$(mid "$i")\", \"table\": \"docs\", \"pk\": \"r$i\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$u\", \"body\": \"row $i\"}}")
	check "a: sub $u pushes row r$i" "$(verdicts "$r")" "applied"
	r=$(pullj "$u" "$(docs_of "$u")" 0)
	check "a: its device bootstraps r$i (and the user is granted the bucket)" "$(page "$r")" "rows=r$i tombstones=-"
	CUR[$u]=$(cursor "$r")
done
# stale state prune_clients must still remove (backdated by the superuser)
q "$DB" >/dev/null <<SQL
INSERT INTO kizunasync.clients (client_id, user_id, last_seen) VALUES
	('00000000-0000-4000-8000-c000000000e1', '$CLERK', now() - interval '91 days');
UPDATE kizunasync.verdicts SET recorded_at = now() - interval '100 days' WHERE mutation_id = '$(mid 1)';
SQL
r=$(qo "$DB" -c "SELECT kizunasync.prune_clients()" 2>&1)
check "a: the non-superuser owner runs prune_clients() as pg_cron would (no claims): one stale client" "$r" "1"
check "a: ... the old verdict went, the others stayed" \
	"$(q "$DB" -c "SELECT string_agg(right(mutation_id::text, 2), ' ' ORDER BY mutation_id) FROM kizunasync.verdicts")" "02 03"
check "a: ... and every bucket grant stayed (third-party sub, Supabase Auth user, uuid sub without an auth.users row)" \
	"$(q "$DB" -c "SELECT count(*) FROM kizunasync.bucket_grants")" "3"
i=0
for u in "$CLERK" "$SUPA" "$GONE"; do
	i=$((i + 1))
	r=$(pushm "$u" "{\"mutation_id\": \"$(mid $((10 + i)))\", \"table\": \"docs\", \"pk\": \"r$i\", \"op\": \"delete\"}")
	check "a: sub $u deletes r$i from another device after the prune" "$(verdicts "$r")" "applied"
	r=$(pullj "$u" "$(docs_of "$u")" "${CUR[$u]}")
	check "a: the first device of $u gets the tombstone of r$i (never keeps it silently)" "$(page "$r")" "rows=- tombstones=r$i"
done

# ------------------------------------------------------------------ b. the ledger per user
# exactly-once reference points first: a write of the hostile user, and
# another user's applied increment and recorded rejection
r=$(pushm "$HOSTILE" "{\"mutation_id\": \"$(mid 20)\", \"table\": \"docs\", \"pk\": \"h1\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$HOSTILE\", \"body\": \"mine\"}}")
check "b: the hostile user (a third-party sub) inserts its own row h1" "$(verdicts "$r")" "applied"
INC="{\"mutation_id\": \"$(mid 21)\", \"table\": \"docs\", \"pk\": \"h1\", \"op\": \"update\", \"columns\": {}, \"transforms\": {\"n\": {\"op\": \"increment\", \"by\": 5}}}"
r=$(pushm "$HOSTILE" "$INC")
check "b: ... and increments its n by 5" "$(verdicts "$r")" "applied"
r=$(pushm "$SUPA" "{\"mutation_id\": \"$(mid 22)\", \"table\": \"docs\", \"pk\": \"s1\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$SUPA\", \"body\": \"s\"}},
	{\"mutation_id\": \"$(mid 23)\", \"table\": \"docs\", \"pk\": \"s1\", \"op\": \"update\", \"columns\": {\"body\": \"t\"}, \"precondition\": {\"body\": \"not s\"}}")
check "b: another user inserts s1 and is refused an update (PRECONDITION)" "$(verdicts "$r")" "applied PRECONDITION"
before=$(ledger_of "$HOSTILE")

t0=$(date +%s.%N)
res=""
for k in $(seq 0 19); do
	r=$(pushgen "$HOSTILE" $((100000 + k * 500)) notices n1)
	res="$res $(vcount "$r")"
done
t1=$(date +%s.%N)
note "20 pushes of 500 updates to notices took $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s"
check "b: 20 pushes of 500 updates to a table the user may only SELECT are all COLUMN_DENIED" \
	"$(printf '%s\n' $res | sort | uniq -c | sed 's/^ *//')" "20 COLUMN_DENIED=500"
check "b: ... and store no ledger row (were 10,000)" "$(( $(ledger_of "$HOSTILE") - before ))" "0"
one="{\"mutation_id\": \"$(mid 100007)\", \"table\": \"notices\", \"pk\": \"n1\", \"op\": \"update\", \"columns\": {\"body\": \"x7\"}}"
r=$(pushm "$HOSTILE" "$one")
check "b: a replay of one of them answers as before: COLUMN_DENIED with the row rendered" \
	"$r" "{\"verdicts\": [{\"reason\": \"COLUMN_DENIED\", \"verdict\": \"rejected\", \"server_row\": {\"id\": \"n1\", \"body\": \"read me\", \"owner_id\": \"$HOSTILE\"}, \"mutation_id\": \"$(mid 100007)\"}]}"

r=$(pushm "$HOSTILE" "{\"mutation_id\": \"$(mid 40)\", \"table\": \"notices\", \"pk\": \"n1\", \"op\": \"update\", \"columns\": {\"body\": \"no\"}},
	{\"mutation_id\": \"$(mid 40)\", \"table\": \"docs\", \"pk\": \"h2\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$HOSTILE\", \"body\": \"sneaked\"}}")
check "b: an id repeated in one batch replays its first occurrence, recorded or not: COLUMN_DENIED twice" "$(verdicts "$r")" "COLUMN_DENIED COLUMN_DENIED"
check "b: ... and the repeat applied nothing" "$(q "$DB" -c "SELECT count(*) FROM public.docs WHERE id = 'h2'")" "0"

res=""
for k in $(seq 0 19); do
	r=$(pushgen "$HOSTILE" $((200000 + k * 500)) docs s1)
	res="$res $(vcount "$r")"
done
check "b: 20 pushes of 500 updates of another user's row are all RLS_DENIED" \
	"$(printf '%s\n' $res | sort | uniq -c | sed 's/^ *//')" "20 RLS_DENIED=500"
check "b: ... and the user keeps at most 1000 rejections in the ledger (was 10,000), plus its 2 applied verdicts" \
	"$(ledger_of "$HOSTILE")" "1002"
check "b: ... the most recent ones" \
	"$(q "$DB" -c "SELECT count(*) FROM kizunasync.verdicts WHERE user_id = '$HOSTILE' AND mutation_id >= '$(mid 209000)'")" "1000"
r=$(pushm "$HOSTILE" "$INC")
check "b: exactly-once after the flood: the replayed increment answers applied" "$(verdicts "$r")" "applied"
check "b: ... and did not apply again (n = 5)" "$(q "$DB" -c "SELECT n FROM public.docs WHERE id = 'h1'")" "5"
r=$(pushm "$SUPA" "{\"mutation_id\": \"$(mid 23)\", \"table\": \"docs\", \"pk\": \"s1\", \"op\": \"update\", \"columns\": {\"body\": \"t\"}, \"precondition\": {\"body\": \"not s\"}}")
check "b: the other user's recorded rejection replays as recorded (PRECONDITION)" "$(verdicts "$r")" "PRECONDITION"
check "b: ... its ledger is untouched by the flood (its 4 verdicts)" "$(ledger_of "$SUPA")" "4"

# ------------------------------------------------------------------ c. a bootstrap after a reap
# The newest entry of the database is a tombstone; it is reaped, and VACUUM
# (autovacuum, in production) removes it.  A device that bootstraps then
# must get a cursor it can use: it stays at the horizon, not below it.
r=$(pushm "$CLERK" "{\"mutation_id\": \"$(mid 30)\", \"table\": \"docs\", \"pk\": \"c1\", \"op\": \"insert\", \"columns\": {\"owner_id\": \"$CLERK\", \"body\": \"short-lived\"}}")
check "c: sub $CLERK inserts c1" "$(verdicts "$r")" "applied"
r=$(pullj "$CLERK" "$(docs_of "$CLERK")" 0)
OLD=$(cursor "$r")
r=$(pushm "$CLERK" "{\"mutation_id\": \"$(mid 31)\", \"table\": \"docs\", \"pk\": \"c1\", \"op\": \"delete\"}")
check "c: ... and deletes it: the newest entry is its tombstone" "$(verdicts "$r")" "applied"
q "$DB" -c "UPDATE kizunasync.entries SET deleted_at = deleted_at - interval '60 days' WHERE kind = 'd'" >/dev/null
newest=$(q "$DB" -c "SELECT max(seq) FROM kizunasync.tombstones")
r=$(qo "$DB" -c "SELECT kizunasync.reap_tombstones()" 2>&1)
check "c: the owner reaps every tombstone, the newest included" "$r" "$newest"
q "$DB" -c "VACUUM kizunasync.entries" >/dev/null
r=$(pullj "$CLERK" "$(docs_of "$CLERK")" "$OLD")
check "c: a device whose cursor predates the reap is told CHECKPOINT_EXPIRED" "$(jq_ "$r" "j -> 'signal' ->> 'type'")" "CHECKPOINT_EXPIRED"
r=$(pullj "$CLERK" "$(docs_of "$CLERK")" 0)
check "c: it bootstraps again (after VACUUM removed the reaped tombstones): no rows left" "$(page "$r")" "rows=- tombstones=-"
NEW=$(cursor "$r")
check "c: ... with a cursor at the reap horizon" "$NEW" "$(q "$DB" -c "SELECT reaped_seq FROM kizunasync.reap_state")"
r=$(pullj "$CLERK" "$(docs_of "$CLERK")" "$NEW")
check "c: ... which its next pull serves (no endless CHECKPOINT_EXPIRED)" \
	"$(jq_ "$r" "coalesce(j -> 'signal' ->> 'type', 'served') || ' ' || (j ->> 'cursor')")" "served $NEW"

finish
