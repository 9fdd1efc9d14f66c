#!/usr/bin/env bash
# shellcheck disable=SC2016  # SQL in single quotes is meant literally
# Issue 23 item 5 (decisions/0087): the extension under a publication FOR
# ALL TABLES (common for CDC and migrations), which publishes the updates
# and deletes of the bookkeeping tables too.
#   a. every table of schema kizunasync has a replica identity that serves
#      UPDATE and DELETE (a primary key, or the whole row);
#   b. with the publication in place, every write path of the bookkeeping
#      works on the publisher: pushes that overwrite journaled values
#      (journal insert and winner_seq update; arrival and hlc mode, row_hlc),
#      push deletes, direct writes, pulls of a registered client (registry,
#      grants), configure(), compact_changelog() (journal deletes),
#      reap_tombstones(), prune_clients(), unsync_table();
#   c. a real subscriber (a database of this cluster with the same schema,
#      its tables not synced: the bookkeeping arrives by replication)
#      receives all of it: its copy of every table equals the publisher's,
#      and it keeps applying afterwards.
# Operational steps run as kz_t_pa_owner (LOGIN NOSUPERUSER, owner of both
# databases), clients in the Data API shape; the superuser installs the
# extension and creates the publication (FOR ALL TABLES needs a superuser in
# PostgreSQL 15), the slot and the subscription, and backdates rows for
# the retention steps.
T_NAME=publication
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_pa_owner}
DB=kz_t_pa
SUB=kz_t_pa_sub
PUBN=kz_t_pa_pub
SLOT=kz_t_pa_slot
owner_role "$T_OWNER" || bail "cannot create role $T_OWNER"
owned_appdb "$DB" "$T_OWNER" || bail "cannot create database $DB"
owned_appdb "$SUB" "$T_OWNER" || bail "cannot create database $SUB"
mid() { printf '00000000-0000-4000-8000-f%011d' "$1"; }
DEV=00000000-0000-4000-8000-c000000000a1
NB="[{\"table\": \"notes\", \"params\": {\"owner_id\": \"$UA\"}}]"

# request SUB CALL (lib.sh): one Data API request against $DB
pushm() { request "$1" "kizunasync.push(batch => '{\"mutations\": [$2]}'::jsonb, last_mutation_id => NULL, schema_version => 1)"; }
pullj() { request "$1" "kizunasync.pull(buckets => '$2', cursor => '$3', schema_version => 1, client_id => '$DEV')"; }
# jq_ JSON EXPR: EXPR over the JSON value j
jq_() { case $1 in ERROR*|'') echo "${1:-no response}"; return ;; esac; printf '%s\n' "WITH s AS (SELECT :'j'::jsonb AS j) SELECT $2 FROM s;" | q "$DB" -v j="$1" 2>&1; }
verdicts() { jq_ "$1" "(SELECT coalesce(string_agg(coalesce(v ->> 'reason', v ->> 'verdict'), ' '), '-') FROM jsonb_array_elements(j -> 'verdicts') v)"; }
# an owner's step: "0:" when it succeeded, else the exit code and the error
owner_step() { local out; out=$(qo "$DB" -c "$1" 2>&1 >/dev/null); echo "$?:$(printf '%s' "$out" | head -c 300)"; }

app_tables() {
	cat <<'SQL'
CREATE TABLE public.notes (id bigint PRIMARY KEY, owner_id uuid NOT NULL, title text, body text);
CREATE TABLE public.marks (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text);
ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.marks ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.notes FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
CREATE POLICY own ON public.marks FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.notes, public.marks TO authenticated;
SQL
}

# ------------------------------------------------------------------ a. replica identities
{
	app_tables
	cat <<'SQL'
SELECT kizunasync.sync_table('public.notes', bucket_column => 'owner_id', conflict_journal => true, register_clients => true);
SELECT kizunasync.sync_table('public.marks', bucket_column => 'owner_id', conflict_mode => 'hlc', conflict_journal => true);
SQL
} | qo "$DB" > "$T_OUT/setup.out" 2>&1
check "setup: the owner creates and syncs two tables (arrival and hlc mode, both journaled)" "$?:$(grep -c ERROR "$T_OUT/setup.out")" "0:0"
no_identity=$(q "$DB" -c "
SELECT coalesce(string_agg(c.relname, ',' ORDER BY c.relname), '-')
  FROM pg_class c
 WHERE c.relnamespace = 'kizunasync'::regnamespace AND c.relkind IN ('r', 'p')
   AND NOT (c.relreplident = 'f'
			OR (c.relreplident = 'i' AND EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisreplident))
			OR (c.relreplident = 'd' AND EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)))")
check "a: every bookkeeping table has a replica identity for UPDATE and DELETE (tables without: -)" "$no_identity" "-"

# ------------------------------------------------------------------ publication and subscriber
wal=$(q postgres -c "SHOW wal_level")
[ "$wal" = logical ] || bail "the cluster runs with wal_level = $wal (scripts/cluster.sh restart sets logical)"
app_tables | qo "$SUB" > "$T_OUT/sub.setup.out" 2>&1
at_finish "q $SUB -c 'ALTER SUBSCRIPTION kz_t_pa_s DISABLE'; q $SUB -c 'ALTER SUBSCRIPTION kz_t_pa_s SET (slot_name = NONE)'; q $SUB -c 'DROP SUBSCRIPTION kz_t_pa_s'; sleep 1; q $DB -c \"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$SLOT'\""
{
	q "$DB" -c "CREATE PUBLICATION $PUBN FOR ALL TABLES" &&
		q "$DB" -c "SELECT 1 FROM pg_create_logical_replication_slot('$SLOT', 'pgoutput')" &&
		q "$SUB" -c "CREATE SUBSCRIPTION kz_t_pa_s CONNECTION 'host=$PGHOST port=$PGPORT dbname=$DB user=$PGUSER'
			PUBLICATION $PUBN WITH (create_slot = false, slot_name = '$SLOT', copy_data = true)"
} > "$T_OUT/pub.out" 2>&1
check "setup: publication FOR ALL TABLES on $DB, subscription from $SUB (same schema, tables not synced)" "$?:$(grep -c ERROR "$T_OUT/pub.out" "$T_OUT/sub.setup.out" | awk -F: '{s+=$2} END {print s}')" "0:0"

# ------------------------------------------------------------------ b. the write paths
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 1)\", \"table\": \"notes\", \"pk\": \"1\", \"op\": \"insert\", \"columns\": {\"id\": 1, \"owner_id\": \"$UA\", \"title\": \"one\", \"body\": \"b1\"}},
	{\"mutation_id\": \"$(mid 2)\", \"table\": \"notes\", \"pk\": \"2\", \"op\": \"insert\", \"columns\": {\"id\": 2, \"owner_id\": \"$UA\", \"title\": \"two\", \"body\": \"b2\"}},
	{\"mutation_id\": \"$(mid 3)\", \"table\": \"notes\", \"pk\": \"3\", \"op\": \"insert\", \"columns\": {\"id\": 3, \"owner_id\": \"$UA\", \"title\": \"three\", \"body\": \"b3\"}},
	{\"mutation_id\": \"$(mid 4)\", \"table\": \"marks\", \"pk\": \"1\", \"op\": \"insert\", \"columns\": {\"id\": 1, \"owner_id\": \"$UA\", \"v\": \"first\"}, \"hlc\": \"2026-01-01T00:00:01.000Z|0|node-a\"}")
check "b: a push inserts three notes and a mark" "$(verdicts "$r")" "applied applied applied applied"
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 5)\", \"table\": \"notes\", \"pk\": \"1\", \"op\": \"update\", \"columns\": {\"title\": \"one, edited\"}}")
check "b: a push that overwrites a journaled value is applied (journal insert, winner_seq update)" "$(verdicts "$r")" "applied"
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 6)\", \"table\": \"notes\", \"pk\": \"1\", \"op\": \"update\", \"columns\": {\"title\": \"one, again\", \"body\": \"b1, again\"}}")
check "b: a second overwrite of the same row is applied" "$(verdicts "$r")" "applied"
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 7)\", \"table\": \"marks\", \"pk\": \"1\", \"op\": \"update\", \"columns\": {\"v\": \"second\"}, \"hlc\": \"2026-01-01T00:00:02.000Z|0|node-b\"}")
check "b: an hlc push that overwrites a journaled value is applied (row_hlc update)" "$(verdicts "$r")" "applied"
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 8)\", \"table\": \"notes\", \"pk\": \"2\", \"op\": \"delete\"}")
check "b: a push deletes a note" "$(verdicts "$r")" "applied"
check "b: the owner updates and deletes directly" \
	"$(owner_step "UPDATE public.notes SET body = 'b3, direct' WHERE id = 3; INSERT INTO public.notes VALUES (4, '$UA', 'four', NULL); DELETE FROM public.notes WHERE id = 4")" "0:"
journal=$(q "$DB" -c "SELECT count(*) || ' rows, ' || count(winner_seq) || ' with winner_seq' FROM kizunasync.conflict_journal")
check "b: the journal holds the overwritten values (title twice, body, v)" "$journal" "4 rows, 4 with winner_seq"
p=$(pullj "$UA" "$NB" 0)
check "b: a registered client pulls notes 1 and 3 with the conflicts of note 1's latest write" \
	"$(jq_ "$p" "(SELECT string_agg(r ->> 'pk', ',' ORDER BY r ->> 'pk') FROM jsonb_array_elements(j -> 'rows') r) || ' ' || (SELECT string_agg(c ->> 'column_name' || '=' || (c -> 'loser_value')::text, ',' ORDER BY c ->> 'column_name') FROM jsonb_array_elements(j -> 'conflicts') c)")" \
	'1,3 body="b1",title="one, edited"'
p=$(pullj "$UA" "$NB" "$(jq_ "$p" "j ->> 'cursor'")")
check "b: it pulls again (registry update)" "$(jq_ "$p" "jsonb_array_length(j -> 'rows')")" "0"
check "b: configure() as the owner (settings insert, then update)" \
	"$(owner_step "SELECT kizunasync.configure(tombstone_ttl_days => 20); SELECT kizunasync.configure(tombstone_ttl_days => 10)")" "0:"
n=$(qo "$DB" -c "SELECT kizunasync.compact_changelog()" 2>&1)
check "b: compact_changelog() as the owner deletes the journal row whose winning entry was superseded" "$n" "1"
q "$DB" -c "UPDATE kizunasync.entries SET deleted_at = deleted_at - interval '40 days' WHERE kind = 'd';
	UPDATE kizunasync.clients SET last_seen = last_seen - interval '400 days';
	UPDATE kizunasync.verdicts SET recorded_at = recorded_at - interval '400 days'" > "$T_OUT/backdate.out" 2>&1
check "b: (superuser) tombstones, clients and verdicts backdated past their TTLs" "$?:$(head -c 300 "$T_OUT/backdate.out")" "0:"
check "b: reap_tombstones() as the owner reaps the tombstones of notes 2 and 4 (reap_state insert)" \
	"$(owner_step "SELECT kizunasync.reap_tombstones()")$(q "$DB" -c "SELECT ' ' || count(*) || ' left, horizon ' || (SELECT count(*) FROM kizunasync.reap_state WHERE reaped_seq > 0) FROM kizunasync.tombstones")" "0: 0 left, horizon 1"
check "b: prune_clients() as the owner prunes the client and the verdicts" \
	"$(owner_step "SELECT kizunasync.prune_clients()")$(q "$DB" -c "SELECT ' ' || (SELECT count(*) FROM kizunasync.clients) || ' clients, ' || count(*) || ' verdicts left' FROM kizunasync.verdicts")" "0: 0 clients, 0 verdicts left"
check "b: unsync_table() as the owner forgets the hlc table's bookkeeping (journal, row_hlc, changelog)" \
	"$(owner_step "SELECT kizunasync.unsync_table('public.marks')")" "0:"
check "b: after all of it the journal holds note 1's latest overwrite only" \
	"$(q "$DB" -c "SELECT string_agg(column_name, ',' ORDER BY column_name) FROM kizunasync.conflict_journal")" "body,title"

# ------------------------------------------------------------------ c. the subscriber
# the content of every table of the bookkeeping and the application, as
# test/t/contents.sql prints it (sequences are not replicated)
tables_of() { q "$1" -v schemas=kizunasync,public -f "$T_DIR/contents.sql" | grep -v '^[^ ]* last_value='; }
caught_up() {
	local i
	tables_of "$DB" > "$T_OUT/pub.tables"
	for i in $(seq 1 150); do
		tables_of "$SUB" > "$T_OUT/sub.tables"
		diff -q "$T_OUT/pub.tables" "$T_OUT/sub.tables" >/dev/null && return 0
		sleep 0.2
	done
	return 1
}
caught_up
check_same "c: the subscriber's copy of every bookkeeping and application table equals the publisher's" "$T_OUT/pub.tables" "$T_OUT/sub.tables"
check "c: ... and holds the journal rows" "$(q "$SUB" -c "SELECT count(*) FROM kizunasync.conflict_journal")" "2"
r=$(pushm "$UA" "{\"mutation_id\": \"$(mid 9)\", \"table\": \"notes\", \"pk\": \"3\", \"op\": \"update\", \"columns\": {\"title\": \"three, later\"}}")
check "c: a later overwrite is applied on the publisher" "$(verdicts "$r")" "applied"
caught_up
check_same "c: the subscriber keeps applying: it equals the publisher again" "$T_OUT/pub.tables" "$T_OUT/sub.tables"
# the apply worker (table synchronization workers of tables still being
# copied come and go beside it)
check "c: the subscription's worker runs (no apply error stopped it)" \
	"$(q "$SUB" -c "SELECT count(*) FROM pg_stat_subscription WHERE subname = 'kz_t_pa_s' AND relid IS NULL AND pid IS NOT NULL")" "1"

finish
