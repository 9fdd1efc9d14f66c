#!/usr/bin/env bash
# shellcheck disable=SC2016  # SQL in single quotes is meant literally
# Issue 12 item 3 (decisions/0082): writes that bypass ordinary triggers.
#   a. writes in a session with session_replication_role = replica (not
#      captured, as documented), then kizunasync.repair_table as the
#      non-superuser table owner: new and changed rows get entries, vanished
#      rows tombstones, devices that pull afterwards equal the table, a
#      second repair returns 0;
#   b. writes with the triggers disabled (ALTER TABLE ... DISABLE TRIGGER
#      ALL by the owner), then repair; the capture trigger fires ALWAYS
#      again afterwards;
#   c. a real logical replication subscription between two databases of
#      this cluster into a synced table (initial copy, inserts, updates,
#      deletes, a bucket move): what replication applies is captured and
#      pulled, a repair finds nothing missed; a session with a replication
#      origin (third-party replication tools) is captured too;
#   d. repair beside live traffic: writers change the rows being repaired
#      while the repair runs; afterwards a device equals the table and a
#      second repair finds nothing (the interleavings one by one:
#      test/specs/repair_concurrency.spec).
# Operational steps run as kz_t_rw_owner (LOGIN NOSUPERUSER, owner of the
# database), clients in the Data API shape; the superuser installs the
# extension, grants SET on session_replication_role (as Supabase does for
# its "postgres") and creates the replication slot and the subscription
# (PostgreSQL 15 requires a superuser for both).
T_NAME=replica_writes
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_rw_owner}
DB=kz_t_rw
PUB=kz_t_rw_pub
SLOT=kz_t_rw_slot
owner_role "$T_OWNER" || bail "cannot create role $T_OWNER"
owned_appdb "$DB" "$T_OWNER" || bail "cannot create database $DB"
q postgres -c "GRANT SET ON PARAMETER session_replication_role TO $T_OWNER" >/dev/null
at_finish "q postgres -c 'REVOKE SET ON PARAMETER session_replication_role FROM $T_OWNER'"

BA="[{\"table\": \"items\", \"params\": {\"owner_id\": \"$UA\"}}]"
BB="[{\"table\": \"items\", \"params\": {\"owner_id\": \"$UB\"}}]"
FA="[{\"table\": \"feed\", \"params\": {\"owner_id\": \"$UA\"}}]"
FB="[{\"table\": \"feed\", \"params\": {\"owner_id\": \"$UB\"}}]"

# a table of the owner's, with RLS by owner_id
app_table() {
	cat <<SQL
CREATE TABLE public.$1 (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text NOT NULL);
ALTER TABLE public.$1 ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.$1 FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.$1 TO authenticated;
SQL
}
# rows_of TABLE SUB: the rows of a bucket as a device holds them
rows_of() { table_text "SELECT id::text AS pk, to_jsonb(t) AS row FROM public.$1 t WHERE owner_id = '$2'"; }
# same_as_table LABEL DEVICE TABLE SUB [empty]: the device's replica equals
# the bucket (which has rows, unless "empty" says it has none)
same_as_table() {
	q "$DB" -c "$(rows_of "$3" "$4")" > "$T_OUT/$2.want"
	q "$DB" -c "$(replica_text "$2" "$3")" > "$T_OUT/$2.got"
	if [ "$(grep -c . "$T_OUT/$2.want")" -eq 0 ] && [ "${5:-}" != empty ]; then
		notok "$1" "the bucket has no rows: nothing to compare"
		return
	fi
	check_same "$1" "$T_OUT/$2.want" "$T_OUT/$2.got"
}
# pulled DEVICE: rows and tombstones the device's pages since mark :mark delivered
pulled() {
	q "$DB" -c "SELECT coalesce(string_agg(x, ' ' ORDER BY x), '-') FROM (
		SELECT 'row:' || (r ->> 'pk') AS x FROM kzt.pages p, jsonb_array_elements(p.page -> 'rows') r
		 WHERE p.device = '$1' AND p.n > (SELECT coalesce(max(n), 0) FROM kzt.pages WHERE device = 'mark:$1')
		UNION ALL
		SELECT 'tomb:' || (t ->> 'pk') FROM kzt.pages p, jsonb_array_elements(p.page -> 'tombstones') t
		 WHERE p.device = '$1' AND p.n > (SELECT coalesce(max(n), 0) FROM kzt.pages WHERE device = 'mark:$1')) s"
}
mark() { q "$DB" -c "INSERT INTO kzt.pages (device) VALUES ('mark:$1')"; }
sync() { sync_device "$1" "$2" "$3" "${4:-100}" | q "$DB" > "$T_OUT/sync.$1.out" 2>&1; }
tgenabled() { q "$DB" -c "SELECT tgenabled FROM pg_trigger WHERE tgrelid = 'public.$1'::regclass AND tgname = 'kizunasync_capture'"; }

# ------------------------------------------------------------------ setup
{
	app_table items
	cat <<SQL
INSERT INTO public.items
SELECT i, CASE WHEN i <= 4 THEN '$UA'::uuid ELSE '$UB'::uuid END, 'seeded ' || i FROM generate_series(1, 6) i;
SELECT kizunasync.sync_table('public.items', bucket_column => 'owner_id');
SQL
} | qo "$DB" > "$T_OUT/setup.out" 2>&1
check "setup: the owner syncs its table (6 existing rows recorded)" "$(tail -n 1 "$T_OUT/setup.out")" "6"
sync DA1 "$UA" "$BA"; sync DB1 "$UB" "$BB"
same_as_table "setup: device DA1 holds user a's rows" DA1 items "$UA"

# ------------------------------------------------------------------ a. replica mode
mark DA1; mark DB1
qo "$DB" > "$T_OUT/a.writes.out" 2>&1 <<SQL
SET session_replication_role = replica;
INSERT INTO public.items VALUES (7, '$UA', 'replica new a'), (8, '$UB', 'replica new b');
UPDATE public.items SET v = 'replica changed' WHERE id = 1;
UPDATE public.items SET owner_id = '$UB', v = 'moved to b' WHERE id = 2;
DELETE FROM public.items WHERE id = 3;
RESET session_replication_role;
SQL
check "a: the owner writes in replica mode (SET session_replication_role = replica)" "$?:$(head -c 300 "$T_OUT/a.writes.out")" "0:"
sync DA1 "$UA" "$BA"
check "a: replica-mode writes are not captured (documented): DA1 pulls nothing" "$(pulled DA1)" "-"
n=$(qo "$DB" -c "SELECT kizunasync.repair_table('public.items')" 2>&1)
check "a: repair_table as the owner records 6 changes (2 new rows, 1 changed, 1 moved: tombstone + entry, 1 vanished)" "$n" "6"
mark DA1
sync DA1 "$UA" "$BA"; sync DB1 "$UB" "$BB"
check "a: DA1 then pulls rows 1 and 7 and the tombstones of 2 (moved out) and 3 (deleted)" "$(pulled DA1)" "row:1 row:7 tomb:2 tomb:3"
check "a: DB1 then pulls rows 2 (moved in) and 8" "$(pulled DB1)" "row:2 row:8"
same_as_table "a: DA1 equals user a's rows" DA1 items "$UA"
same_as_table "a: DB1 equals user b's rows" DB1 items "$UB"
sync DA2 "$UA" "$BA"
same_as_table "a: a new device (bootstrap) equals user a's rows" DA2 items "$UA"
n=$(qo "$DB" -c "SELECT kizunasync.repair_table('public.items')" 2>&1)
check "a: a second repair_table returns 0 (nothing missed)" "$n" "0"
# ordinary writes are captured: repair after them finds nothing
qo "$DB" -c "UPDATE public.items SET v = 'ordinary' WHERE id = 4" >/dev/null 2>&1
n=$(qo "$DB" -c "SELECT kizunasync.repair_table('public.items')" 2>&1)
check "a: after an ordinary (captured) write repair_table returns 0" "$n" "0"
# an UPDATE that changes nothing is not captured (no change to deliver) but
# makes a new row version: repair records the row again (decisions/0082:
# a re-delivery, never a lost or wrong row)
qo "$DB" -c "UPDATE public.items SET v = v WHERE id = 4" >/dev/null 2>&1
n=$(qo "$DB" -c "SELECT kizunasync.repair_table('public.items')" 2>&1)
check "a: after a no-op UPDATE repair_table records that row again (1, documented)" "$n" "1"
sync DA1 "$UA" "$BA"

# ------------------------------------------------------------------ b. triggers disabled
mark DA1; mark DB1
qo "$DB" > "$T_OUT/b.writes.out" 2>&1 <<SQL
ALTER TABLE public.items DISABLE TRIGGER ALL;
INSERT INTO public.items VALUES (9, '$UA', 'while disabled');
UPDATE public.items SET v = 'changed while disabled' WHERE id = 4;
DELETE FROM public.items WHERE id = 5;
ALTER TABLE public.items ENABLE TRIGGER ALL;
SQL
check "b: the owner writes with DISABLE TRIGGER ALL, then ENABLE TRIGGER ALL" "$?:$(head -c 300 "$T_OUT/b.writes.out")" "0:"
sync DA1 "$UA" "$BA"
check "b: writes with the trigger disabled are not captured: DA1 pulls nothing" "$(pulled DA1)" "-"
qo "$DB" -c "SELECT kizunasync.repair_table('public.items')" > "$T_OUT/b.repair.out" 2> "$T_OUT/b.repair.err"
check "b: repair_table records 3 changes (1 new, 1 changed, 1 vanished)" "$(cat "$T_OUT/b.repair.out" "$T_OUT/b.repair.err" | grep -v WARNING | grep -v '^DETAIL\|^HINT' | head -c 300)" "3"
check "b: repair_table warns that the capture trigger did not fire ALWAYS (ENABLE TRIGGER ALL enables it for ordinary sessions only)" \
	"$(grep -c 'WARNING: .*capture trigger' "$T_OUT/b.repair.err")" "1"
check "b: after repair_table the capture trigger fires ALWAYS again (tgenabled A)" "$(tgenabled items)" "A"
sync DA1 "$UA" "$BA"; sync DB1 "$UB" "$BB"
check "b: DA1 then pulls rows 4 and 9" "$(pulled DA1)" "row:4 row:9"
check "b: DB1 then pulls the tombstone of 5" "$(pulled DB1)" "tomb:5"
same_as_table "b: DA1 equals user a's rows" DA1 items "$UA"
same_as_table "b: DB1 equals user b's rows" DB1 items "$UB"
n=$(qo "$DB" -c "SELECT kizunasync.repair_table('public.items')" 2>&1)
check "b: a second repair_table returns 0" "$n" "0"

# ------------------------------------------------------------------ c. logical replication
wal=$(q postgres -c "SHOW wal_level")
if [ "$wal" != logical ]; then
	notok "c: the cluster runs with wal_level = logical (scripts/cluster.sh sets it; restart an older cluster: scripts/cluster.sh restart)" "got wal_level = $wal"
else
	ok "c: the cluster runs with wal_level = logical"
fi
dropdb --if-exists --force "$PUB" >/dev/null 2>&1
createdb -T template0 -O "$T_OWNER" "$PUB" && T_DBS+=("$PUB")
q "$PUB" -f "$T_ROOT/test/setup/standins.sql" >/dev/null
q "$PUB" -c "GRANT USAGE ON SCHEMA auth TO $T_OWNER" >/dev/null
at_finish "q $DB -c 'ALTER SUBSCRIPTION kz_t_rw_sub DISABLE' ; q $DB -c 'ALTER SUBSCRIPTION kz_t_rw_sub SET (slot_name = NONE)'; q $DB -c 'DROP SUBSCRIPTION kz_t_rw_sub'; sleep 1; q $PUB -c \"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '$PUB'\""
{
	app_table feed
	cat <<SQL
INSERT INTO public.feed VALUES (1, '$UA', 'one'), (2, '$UA', 'two'), (3, '$UB', 'three');
CREATE PUBLICATION kz_t_rw_pub FOR TABLE public.feed;
SQL
} | qo "$PUB" > "$T_OUT/c.pub.out" 2>&1
q "$PUB" -c "SELECT 1 FROM pg_create_logical_replication_slot('$SLOT', 'pgoutput')" >> "$T_OUT/c.pub.out" 2>&1
{
	app_table feed
	echo "SELECT kizunasync.sync_table('public.feed', bucket_column => 'owner_id');"
} | qo "$DB" > "$T_OUT/c.sub.out" 2>&1
q "$DB" >> "$T_OUT/c.sub.out" 2>&1 <<SQL
CREATE SUBSCRIPTION kz_t_rw_sub
	CONNECTION 'host=$PGHOST port=$PGPORT dbname=$PUB user=$PGUSER'
	PUBLICATION kz_t_rw_pub WITH (create_slot = false, slot_name = '$SLOT', copy_data = true);
SQL
check "c: publisher (table, publication, slot) and subscriber (synced table, subscription) set up" \
	"$(grep -c 'ERROR' "$T_OUT/c.pub.out" "$T_OUT/c.sub.out" | awk -F: '{s+=$2} END {print s}')" "0"
# caught_up: the subscriber's table equals the publisher's (at most 30 s)
feed_rows='SELECT coalesce(string_agg(id || $$ $$ || owner_id || $$ $$ || v, $$,$$ ORDER BY id), $$-$$) FROM public.feed'
caught_up() {
	local i want got
	want=$(q "$PUB" -c "$feed_rows")
	for i in $(seq 1 150); do
		got=$(q "$DB" -c "$feed_rows")
		[ "$got" = "$want" ] && return 0
		sleep 0.2
	done
	note "subscriber: $got" "publisher: $want"
	return 1
}
check_true "c: the initial copy reaches the subscriber" caught_up
sync FA1 "$UA" "$FA"; sync FB1 "$UB" "$FB"
check "c: the rows the initial copy applied are captured: FA1 bootstraps rows 1 and 2" "$(pulled FA1)" "row:1 row:2"
same_as_table "c: FA1 equals user a's replicated rows" FA1 feed "$UA"
mark FA1; mark FB1
qo "$PUB" > "$T_OUT/c.writes.out" 2>&1 <<SQL
INSERT INTO public.feed VALUES (4, '$UA', 'four');
UPDATE public.feed SET v = 'one, edited' WHERE id = 1;
DELETE FROM public.feed WHERE id = 2;
UPDATE public.feed SET owner_id = '$UA', v = 'three, given to a' WHERE id = 3;
SQL
check_true "c: inserts, updates, a delete and a bucket move on the publisher reach the subscriber" caught_up
sync FA1 "$UA" "$FA"; sync FB1 "$UB" "$FB"
check "c: FA1 pulls what replication applied: rows 1, 3, 4 and the tombstone of 2" "$(pulled FA1)" "row:1 row:3 row:4 tomb:2"
check "c: FB1 pulls the tombstone of 3 (moved to a)" "$(pulled FB1)" "tomb:3"
same_as_table "c: FA1 equals user a's replicated rows" FA1 feed "$UA"
same_as_table "c: FB1 equals user b's replicated rows (none left)" FB1 feed "$UB" empty
n=$(qo "$DB" -c "SELECT kizunasync.repair_table('public.feed')" 2>&1)
check "c: repair_table on the subscriber returns 0 (replication missed nothing)" "$n" "0"
q "$DB" -c "DROP SUBSCRIPTION kz_t_rw_sub" > "$T_OUT/c.drop.out" 2>&1
check "c: DROP SUBSCRIPTION (drops the slot on the publisher)" "$?:$(grep -v NOTICE "$T_OUT/c.drop.out" | head -c 200)" "0:"
# a third-party replication tool: a session with a replication origin
mark FA1
q "$DB" > "$T_OUT/c.origin.out" 2>&1 <<SQL
SELECT 1 FROM pg_replication_origin_create('kz_t_rw_tool');
SET session_replication_role = replica;
SELECT 1 FROM pg_replication_origin_session_setup('kz_t_rw_tool');
INSERT INTO public.feed VALUES (10, '$UA', 'applied by a tool');
SELECT 1 FROM pg_replication_origin_session_reset();
RESET session_replication_role;
SELECT 1 FROM pg_replication_origin_drop('kz_t_rw_tool');
SQL
sync FA1 "$UA" "$FA"
check "c: a write in replica mode with a replication origin set is captured: FA1 pulls row 10" "$(pulled FA1)" "row:10"

# ------------------------------------------------------------------ d. beside live traffic
# 10,000 rows written in replica mode (missed), 300 existing ones changed and
# 300 deleted in replica mode; then, while repair_table runs, two writers
# (Data API shape, user a) update, delete and re-insert rows among them.
qo "$DB" > "$T_OUT/d.writes.out" 2>&1 <<SQL
SET session_replication_role = replica;
INSERT INTO public.items SELECT i, '$UA', 'missed ' || i FROM generate_series(1000, 10999) i;
SET session_replication_role = origin;
INSERT INTO public.items SELECT i, '$UA', 'captured ' || i FROM generate_series(20000, 20599) i;
SET session_replication_role = replica;
UPDATE public.items SET v = 'missed update' WHERE id BETWEEN 20000 AND 20299;
DELETE FROM public.items WHERE id BETWEEN 20300 AND 20599;
SQL
check "d: the owner writes 10,600 changes in replica mode" "$?:$(head -c 300 "$T_OUT/d.writes.out")" "0:"
writer() {	# writer N: 150 single-statement requests as user a
	local i k stmt
	for i in $(seq 1 150); do
		k=$(( (i * 61 + $1 * 1013) % 10000 + 1000 ))
		case $((i % 5)) in
			0) stmt="DELETE FROM public.items WHERE id = $k" ;;
			1) stmt="INSERT INTO public.items VALUES ($((20300 + (i * 7 + $1) % 300)), '$UA', 'back $i') ON CONFLICT (id) DO UPDATE SET v = 'back again $i'" ;;
			2) stmt="UPDATE public.items SET v = 'writer $1 $i' WHERE id = $((20000 + (i * 11 + $1) % 300))" ;;
			*) stmt="UPDATE public.items SET v = 'writer $1 $i' WHERE id = $k" ;;
		esac
		printf '%s\n' "BEGIN;" "SET LOCAL ROLE authenticated;" \
			"SELECT set_config('request.jwt.claims', '{\"sub\": \"$UA\", \"role\": \"authenticated\"}', true) IS NULL AS x;" \
			"$stmt;" "COMMIT;"
	done | q "$DB" > "$T_OUT/d.writer$1.out" 2>&1
}
writer 1 & w1=$!
writer 2 & w2=$!
sleep 0.1
t0=$(date +%s.%N)
n=$(qo "$DB" -c "SELECT kizunasync.repair_table('public.items')" 2>&1)
t1=$(date +%s.%N)
wait $w1; r1=$?; wait $w2; r2=$?
check "d: two writers ran beside the repair without errors" "$r1 $r2 $(grep -c ERROR "$T_OUT/d.writer1.out" "$T_OUT/d.writer2.out" | awk -F: '{s+=$2} END {print s}')" "0 0 0"
check_true "d: repair_table beside the writers recorded the missed changes (got $n; 10,600 were due, at most 300 taken over by the writers)" \
	test "${n:-0}" -ge 10300 2>/dev/null
note "repair of ~10,600 missed changes beside 2 writers: $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s"
sync DA3 "$UA" "$BA" 1000
same_as_table "d: a device bootstrapping after the repair equals user a's rows" DA3 items "$UA"
mark DA1
sync DA1 "$UA" "$BA" 1000
same_as_table "d: DA1 (delta from before) equals user a's rows" DA1 items "$UA"
n=$(qo "$DB" -c "SELECT kizunasync.repair_table('public.items')" 2>&1)
check "d: a second repair_table returns 0 (the first missed nothing, the writers' changes were captured)" "$n" "0"

finish
