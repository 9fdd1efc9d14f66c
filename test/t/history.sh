# shellcheck shell=bash
# shellcheck disable=SC2028  # echo prints psql backslash commands literally
# The history both operations tests build (sourced after lib.sh):
#   history_schema            app tables with RLS and policies, synced
#   history_sql SETTINGS_API  pushes, pulls, deletes, a reap, setting changes,
#                             attachments, recorded device cursors
# SETTINGS_API is how settings are changed: "configure" (0.2.0:
# kizunasync.configure(...)) or "update" (0.1.0: UPDATE kizunasync.settings).
# Everything the tests need later is recorded in schema kzt of the same
# database (and so travels through a dump with it):
#   kzt.calls(label, response)      every request's response
#   kzt.pushes(label, sub, client_id, batch, response)
#   kzt.devices(device, sub, client_id, cursor, kind)
#     A1 current (pulled to the end; changes pending since), A2 expired
#     (pulled to the end early, below the reap horizon now), A3 mid-page
#     continuation of a delta (start:pos, start above the horizon), A4
#     mid-page continuation of a bootstrap (0:pos), B1 current (user b).
# Each request is a Data API request (lib.sh api/pull_pages).

# clients (device ids)
A1=00000000-0000-4000-8000-c00000000001
A2=00000000-0000-4000-8000-c00000000002
A3=00000000-0000-4000-8000-c00000000003
A4=00000000-0000-4000-8000-c00000000005
B1=00000000-0000-4000-8000-c00000000004
# rows
N1=00000000-0000-4000-8000-e00000000001 N2=00000000-0000-4000-8000-e00000000002
N3=00000000-0000-4000-8000-e00000000003 N4=00000000-0000-4000-8000-e00000000004
N5=00000000-0000-4000-8000-e00000000005 N6=00000000-0000-4000-8000-e00000000006
N7=00000000-0000-4000-8000-e00000000007 NB1=00000000-0000-4000-8000-e0000000000b
NB2=00000000-0000-4000-8000-e0000000000c NNEW=00000000-0000-4000-8000-e000000000ff

# mid NN: a mutation id
mid() { printf '00000000-0000-4000-8000-f%011d' "$1"; }

# push LABEL SUB CLIENT BATCH: a push request, recorded in kzt.pushes
push() {
	local label=$1 sub=$2 client=$3 batch=$4 cl
	if [ "$client" = NULL ]; then cl=NULL; else cl="'$client'"; fi
	echo "INSERT INTO kzt.pushes (label, sub, client_id, batch) VALUES ('$label', '$sub', $cl, '$batch');"
	api "$label" "$sub" "kizunasync.push(batch => '$batch'::jsonb, last_mutation_id => NULL, schema_version => 1, client_id => $cl)"
	echo "UPDATE kzt.pushes SET response = :'r' WHERE label = '$label';"
}

# device DEVICE SUB CLIENT KIND: record :cur as the device's cursor
device() {
	echo "INSERT INTO kzt.devices VALUES ('$1', '$2', '$3', :'cur', '$4') ON CONFLICT (device) DO UPDATE SET cursor = EXCLUDED.cursor;"
}

# settings SETTINGS_API ASSIGNMENTS...: change settings (name=value ...)
settings() {
	local api=$1; shift
	local a args="" sets=""
	for a in "$@"; do
		args="$args${args:+, }${a%%=*} => ${a#*=}"
		sets="$sets${sets:+, }${a%%=*} = ${a#*=}"
	done
	if [ "$api" = configure ]; then
		echo "SELECT kizunasync.configure($args) IS NOT NULL AS configured \\gset"
	else
		echo "UPDATE kizunasync.settings SET $sets;"
	fi
}

history_schema() {
	cat <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA kzt;
CREATE TABLE kzt.calls (n serial PRIMARY KEY, label text NOT NULL, response jsonb);
CREATE TABLE kzt.pushes (label text PRIMARY KEY, sub uuid, client_id uuid, batch jsonb NOT NULL, response jsonb);
CREATE TABLE kzt.devices (device text PRIMARY KEY, sub uuid NOT NULL, client_id uuid, cursor text NOT NULL, kind text NOT NULL);

-- notes: bucketed by owner, registered clients, transforms
CREATE TABLE public.notes (
	id uuid PRIMARY KEY,
	owner_id uuid NOT NULL,
	body text NOT NULL,
	tags text[] NOT NULL DEFAULT '{}',
	likes integer NOT NULL DEFAULT 0,
	image text);
ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.notes FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.notes TO authenticated;

-- tasks: hlc conflict mode with the conflict journal, its own tombstone TTL
CREATE TABLE public.tasks (
	id bigint PRIMARY KEY,
	owner_id uuid NOT NULL,
	title text NOT NULL,
	done boolean NOT NULL DEFAULT false);
ALTER TABLE public.tasks ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.tasks FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.tasks TO authenticated;

-- labels: an unbucketed, pull-only catalog every signed-in user reads
CREATE TABLE public.labels (code text PRIMARY KEY, label text NOT NULL);
ALTER TABLE public.labels ENABLE ROW LEVEL SECURITY;
CREATE POLICY read_all ON public.labels FOR SELECT TO authenticated USING (true);
GRANT SELECT ON public.labels TO authenticated;

-- rows that exist before provisioning (seeded by sync_table)
INSERT INTO public.labels VALUES ('red', 'Red'), ('green', 'Green'), ('blue', 'Blue');
SQL
	cat <<SQL
INSERT INTO public.notes (id, owner_id, body) VALUES
	('$N1', '$UA', 'seeded one'), ('$N2', '$UA', 'seeded two');
SELECT kizunasync.sync_table('public.notes', bucket_column => 'owner_id', register_clients => true) AS seeded_notes \gset
SELECT kizunasync.sync_table('public.tasks', bucket_column => 'owner_id', conflict_mode => 'hlc',
	conflict_journal => true, register_clients => true, tombstone_ttl_days => 7) AS seeded_tasks \gset
SELECT kizunasync.sync_table('public.labels', sync_mode => 'pull-only', key_columns => '{code}') AS seeded_labels \gset

-- Storage stand-in content for attachments
INSERT INTO storage.buckets (id, name) VALUES ('photos', 'photos');
CREATE POLICY read_own ON storage.objects FOR SELECT TO authenticated USING (owner_id = auth.uid()::text);
GRANT SELECT ON storage.objects TO authenticated;
INSERT INTO storage.objects (id, bucket_id, name, owner_id) VALUES
	('00000000-0000-4000-8000-0b0000000001', 'photos', '$UA/$N1/cover.jpg', '$UA'),
	('00000000-0000-4000-8000-0b0000000002', 'photos', '$UA/$N2/scan.png', '$UA');
RESET client_min_messages;
SQL
}

history_sql() {
	local sapi=$1 BA BB
	BA=$(buckets_of "$UA"); BB=$(buckets_of "$UB")
	history_schema
	settings "$sapi" max_pull_limit=4000 max_batch_size=250 client_ttl_days=120 hlc_max_skew_ms=8000 "reap_schedule='5 4 * * *'"

	# A1 bootstraps (grants for a's buckets), B1 too
	echo "\\set cur 0"
	pull_pages A1 "$UA" "$BA" 500 "$A1"
	device A1 "$UA" "$A1" current
	echo "\\set cur 0"
	pull_pages B1 "$UB" "$BB" 500 "$B1"
	device B1 "$UB" "$B1" current

	# a: inserts (notes, tasks with clocks); b: inserts
	push p01 "$UA" "$A1" '{"atomic": true, "mutations": [
		{"mutation_id": "'"$(mid 1)"'", "table": "notes", "pk": "'"$N3"'", "op": "insert", "columns": {"owner_id": "'"$UA"'", "body": "third", "tags": ["x"]}},
		{"mutation_id": "'"$(mid 2)"'", "table": "notes", "pk": "'"$N4"'", "op": "insert", "columns": {"owner_id": "'"$UA"'", "body": "fourth"}},
		{"mutation_id": "'"$(mid 3)"'", "table": "tasks", "pk": "1", "op": "insert", "columns": {"owner_id": "'"$UA"'", "title": "buy milk"}, "hlc": "2024-01-01T00:00:01.000Z|0|dev-a1"},
		{"mutation_id": "'"$(mid 4)"'", "table": "tasks", "pk": "2", "op": "insert", "columns": {"owner_id": "'"$UA"'", "title": "call bob"}, "hlc": "2024-01-01T00:00:01.000Z|1|dev-a1"}]}'
	push p02 "$UB" "$B1" '{"mutations": [
		{"mutation_id": "'"$(mid 5)"'", "table": "notes", "pk": "'"$NB1"'", "op": "insert", "columns": {"owner_id": "'"$UB"'", "body": "b one"}},
		{"mutation_id": "'"$(mid 6)"'", "table": "notes", "pk": "'"$NB2"'", "op": "insert", "columns": {"owner_id": "'"$UB"'", "body": "b two"}}]}'

	# A2 syncs everything so far, then goes offline for good
	echo "\\set cur 0"
	pull_pages A2 "$UA" "$BA" 3 "$A2"
	device A2 "$UA" "$A2" expired

	# a: transforms, a delete, clock conflicts (journal), a rejected write
	push p03 "$UA" "$A1" '{"mutations": [
		{"mutation_id": "'"$(mid 7)"'", "table": "notes", "pk": "'"$N3"'", "op": "update", "columns": {"body": "third, edited"}, "transforms": {"likes": {"op": "increment", "by": 2}, "tags": {"op": "arrayUnion", "values": ["y"]}}},
		{"mutation_id": "'"$(mid 8)"'", "table": "notes", "pk": "'"$N4"'", "op": "delete"},
		{"mutation_id": "'"$(mid 9)"'", "table": "tasks", "pk": "1", "op": "update", "columns": {"title": "buy oat milk"}, "hlc": "2024-01-01T00:00:05.000Z|0|dev-a2"},
		{"mutation_id": "'"$(mid 10)"'", "table": "tasks", "pk": "1", "op": "update", "columns": {"title": "buy soy milk", "done": true}, "hlc": "2024-01-01T00:00:03.000Z|0|dev-a3"},
		{"mutation_id": "'"$(mid 11)"'", "table": "tasks", "pk": "2", "op": "update", "columns": {"title": "stale"}, "hlc": "2024-01-01T00:00:00.500Z|0|dev-a3"},
		{"mutation_id": "'"$(mid 12)"'", "table": "notes", "pk": "'"$NB1"'", "op": "update", "columns": {"body": "not yours"}},
		{"mutation_id": "'"$(mid 13)"'", "table": "notes", "pk": "'"$N1"'", "op": "update", "columns": {"body": "nope"}, "precondition": {"body": "not the body"}}]}'
	push p04 "$UB" "$B1" '{"mutations": [
		{"mutation_id": "'"$(mid 14)"'", "table": "notes", "pk": "'"$NB2"'", "op": "delete"}]}'
	push p05 "$UA" "$A1" '{"mutations": [
		{"mutation_id": "'"$(mid 15)"'", "table": "tasks", "pk": "2", "op": "delete", "hlc": "2024-01-01T00:00:06.000Z|0|dev-a1"}]}'

	# a server-side change to the catalog
	echo "UPDATE public.labels SET label = 'Light blue' WHERE code = 'blue';"

	# A1 and B1 catch up (their cursors end above every tombstone so far)
	echo "SELECT cursor AS cur FROM kzt.devices WHERE device = 'A1' \\gset"
	pull_pages A1 "$UA" "$BA" 3 "$A1"
	device A1 "$UA" "$A1" current
	echo "SELECT cursor AS cur FROM kzt.devices WHERE device = 'B1' \\gset"
	pull_pages B1 "$UB" "$BB" 500 "$B1"
	device B1 "$UB" "$B1" current
	# A3 bootstraps now (its cursor ends above every tombstone so far too)
	echo "\\set cur 0"
	pull_pages A3 "$UA" "$BA" 500 "$A3"
	device A3 "$UA" "$A3" continuation

	# the reap: every tombstone so far is made old, then reaped (A2's
	# cursor is below the new horizon, A1's and B1's are not)
	cat <<'SQL'
-- (0.1.0 has the table tombstones; since 0.2.0 they are entries, 0092)
DO $$ BEGIN
	IF to_regclass('kizunasync.entries') IS NULL THEN
		UPDATE kizunasync.tombstones SET deleted_at = deleted_at - interval '60 days';
	ELSE
		UPDATE kizunasync.entries SET deleted_at = deleted_at - interval '60 days' WHERE kind = 'd';
	END IF;
END $$;
SELECT kizunasync.reap_tombstones() AS reaped_to \gset
SQL
	settings "$sapi" tombstone_ttl_days=20 "compact_schedule='15 4 * * *'"

	# after the reap: a recent delete (a tombstone that stays), more rows
	push p06 "$UA" "$A1" '{"mutations": [
		{"mutation_id": "'"$(mid 16)"'", "table": "notes", "pk": "'"$N3"'", "op": "delete"},
		{"mutation_id": "'"$(mid 17)"'", "table": "notes", "pk": "'"$N5"'", "op": "insert", "columns": {"owner_id": "'"$UA"'", "body": "fifth"}},
		{"mutation_id": "'"$(mid 18)"'", "table": "notes", "pk": "'"$N6"'", "op": "insert", "columns": {"owner_id": "'"$UA"'", "body": "sixth"}},
		{"mutation_id": "'"$(mid 19)"'", "table": "tasks", "pk": "3", "op": "insert", "columns": {"owner_id": "'"$UA"'", "title": "water plants"}, "hlc": "2024-01-01T00:01:00.000Z|0|dev-a1"}]}'

	# attachments: a confirms two uploads (one bound to its note row)
	cat <<SQL
$(api att1 "$UA" "to_jsonb(kizunasync.attachment_confirm(p_bucket => 'photos', p_path => '$UA/$N1/cover.jpg', p_sha256 => repeat('ab', 32), p_size => 1234, p_media_type => 'image/jpeg', p_table => 'notes')::text)")
$(api att2 "$UA" "to_jsonb(kizunasync.attachment_confirm(p_bucket => 'photos', p_path => '$UA/$N2/scan.png', p_sha256 => repeat('0f', 32), p_size => 99, p_media_type => 'image/png')::text)")
SQL

	# A3: one delta page of 2, has_more (a mid-page continuation start:pos);
	# A4: one bootstrap page of 2, has_more (0:pos)
	echo "SELECT cursor AS cur FROM kzt.devices WHERE device = 'A3' \\gset"
	pull_pages A3 "$UA" "$BA" 2 "$A3" 1
	device A3 "$UA" "$A3" continuation
	echo "\\set cur 0"
	pull_pages A4 "$UA" "$BA" 2 "$A4" 1
	device A4 "$UA" "$A4" continuation
	# A1 catches up to the end again
	echo "SELECT cursor AS cur FROM kzt.devices WHERE device = 'A1' \\gset"
	pull_pages A1 "$UA" "$BA" 3 "$A1"
	device A1 "$UA" "$A1" current

	# one change A1 has not pulled yet
	push p07 "$UA" "$A1" '{"mutations": [
		{"mutation_id": "'"$(mid 20)"'", "table": "notes", "pk": "'"$N7"'", "op": "insert", "columns": {"owner_id": "'"$UA"'", "body": "seventh"}},
		{"mutation_id": "'"$(mid 21)"'", "table": "tasks", "pk": "3", "op": "update", "columns": {"title": "water all plants"}, "hlc": "2024-01-01T00:02:00.000Z|0|dev-a2"}]}'
}

# device_pulls DB [advance]: psql text pulling from every recorded device
# cursor (in device order) to the end, echoing each page ("A1 page 1:
# {...}"); the registered client of each device is sent along, as the app
# would.  With "advance", each device's final cursor is recorded.
device_pulls() {
	local db=$1 adv=${2:-} dev sub client cur
	while IFS='|' read -r dev sub client cur; do
		echo "\\set cur '$cur'"
		pull_pages "$dev" "$sub" "$(buckets_of "$sub")" 3 "$client"
		if [ "$adv" = advance ]; then
			echo "UPDATE kzt.devices SET cursor = :'cur' WHERE device = '$dev';"
		fi
	done < <(q "$db" -c "SELECT device, sub, client_id, cursor FROM kzt.devices ORDER BY device")
}

# ---------------------------------------------------------------- continuing
# What happens to a database after the operation under test (a restore, an
# upgrade): continue_steps DB runs, in this order, and writes
# $T_OUT/<DB>.<step> (stdout; stderr to <step>.err):
#   pulls1  every device pulls from its recorded cursor to the end
#   new1    a new write by user a (note NNEW)
#   pulls2  every device pulls from its recorded cursor to the end again;
#           the final cursors are recorded
#   pulls3  every device pulls from its final cursor (nothing is left)
#   replays p03 and p06 are sent again (same mutation ids): the ledger answers
#   new2    a write that records a conflict-journal entry (hlc, newer clock)
# continue_checks LABEL REF DB compares DB's outputs with REF's (the
# original, or a twin that was not upgraded) and checks the outcomes.
# T_EXPIRED: devices the operation under test is expected to expire (the
# upgrade from 0.1.0 expires paused bootstraps of registered clients: 0.1.0's
# registry does not know when they began, decisions/0010); their pulls are
# left out of the comparisons with REF, and they bootstrap again from 0
# (step rebootstrap) as a client does on CHECKPOINT_EXPIRED.
T_EXPIRED=${T_EXPIRED:-}
run_sql() { q "$1" > "$2" 2> "$2.err"; }
continue_steps() {
	local db=$1 o=$T_OUT/$1 dev sub client
	device_pulls "$db" | run_sql "$db" "$o.pulls1"
	{ push pnew1 "$UA" "$A1" '{"mutations": [
		{"mutation_id": "'"$(mid 901)"'", "table": "notes", "pk": "'"$NNEW"'", "op": "insert", "columns": {"owner_id": "'"$UA"'", "body": "written after"}}]}'
	  echo "\\echo :r"; } | run_sql "$db" "$o.new1"
	device_pulls "$db" advance | run_sql "$db" "$o.pulls2"
	for dev in $T_EXPIRED; do
		IFS='|' read -r sub client < <(q "$db" -c "SELECT sub, client_id FROM kzt.devices WHERE device = '$dev'")
		echo "\\set cur 0"
		pull_pages "$dev" "$sub" "$(buckets_of "$sub")" 3 "$client"
		echo "UPDATE kzt.devices SET cursor = :'cur' WHERE device = '$dev';"
	done | run_sql "$db" "$o.rebootstrap"
	device_pulls "$db" | run_sql "$db" "$o.pulls3"
	{ echo "SELECT last_value AS seq_before FROM kizunasync.change_seq \\gset"
	  replay_sql "$db" p03; replay_sql "$db" p06
	  echo "SELECT 'change_seq moved: ' || (last_value <> :seq_before) FROM kizunasync.change_seq;"
	} | run_sql "$db" "$o.replays"
	{ push pnew2 "$UA" "$A1" '{"mutations": [
		{"mutation_id": "'"$(mid 902)"'", "table": "tasks", "pk": "1", "op": "update", "columns": {"title": "buy rice milk"}, "hlc": "2024-01-02T00:00:00.000Z|0|dev-a1"}]}'
	  echo "\\echo :r"
	  echo "SELECT 'journal ' || id || ' ' || column_name || ' ' || loser_value FROM kizunasync.conflict_journal WHERE winner_mutation_id = '$(mid 902)';"
	} | run_sql "$db" "$o.new2"
}
# replay_sql DB LABEL: re-send a recorded push (same batch, user, client);
# prints whether the verdicts equal the recorded ones, server_row aside (a
# stored verdict's server_row is rendered again on replay)
replay_sql() {
	local db=$1 label=$2 sub client batch
	IFS='|' read -r sub client < <(q "$db" -c "SELECT sub, client_id FROM kzt.pushes WHERE label = '$label'")
	batch=$(q "$db" -c "SELECT batch FROM kzt.pushes WHERE label = '$label'")
	api "replay-$label" "$sub" "kizunasync.push(batch => '$batch'::jsonb, last_mutation_id => NULL, schema_version => 1, client_id => '$client')"
	echo "\\echo replay $label: :r"
	echo "SELECT 'replay $label verdicts as recorded: ' || ((SELECT jsonb_agg(v - 'server_row') FROM jsonb_array_elements(:'r'::jsonb -> 'verdicts') v)
		= (SELECT jsonb_agg(v - 'server_row') FROM kzt.pushes p, jsonb_array_elements(p.response -> 'verdicts') v WHERE p.label = '$label'));"
}
# count_pk FILE DEVICE PK: how many times PK appears in DEVICE's pages
count_pk() { grep "^$2 page" "$1" | grep -o "\"pk\": \"$3\"" | wc -l | tr -d ' '; }
expired_count() { grep -c '^A2 page 1: .*"signal": {"type": "CHECKPOINT_EXPIRED"}' "$1"; }
CONTINUE_CHECKS=(
	"pulls from the recorded cursors answer as in REF"
	"A2 (below the reap horizon) is still told CHECKPOINT_EXPIRED"
	"after a new write, pulls from the old cursors answer as in REF"
	"the new row reaches A1, A3 and A4 exactly once (and not B1)"
	"a pull from the final cursors delivers nothing again"
	"replayed mutation ids get their recorded verdicts and apply nothing"
	"replay answers equal REF's"
	"a new conflict-journal entry is recorded as in REF")
# continue_checks LABEL REF REFNAME DB [failed-reason]
continue_checks() {
	local label=$1 ref=$T_OUT/$2 refname=$3 db=$4 why=${5:-} o=$T_OUT/$4 d
	local n=("${CONTINUE_CHECKS[@]//REF/$refname}")
	if [ -n "$why" ]; then
		for d in "${n[@]}"; do notok "$label: $d" "not run: $why"; done
		return
	fi
	local step f dev got=""
	for step in pulls1 pulls2; do
		for f in "$ref.$step" "$o.$step"; do
			if [ -n "$T_EXPIRED" ]; then grep -v -E "^($(tr ' ' '|' <<< "$T_EXPIRED"))[: ]" "$f" > "$f.kept"
			else cp "$f" "$f.kept"; fi
		done
	done
	[ -f "$o.pulls2.err" ] && cp "$o.pulls2.err" "$o.pulls2.kept.err"
	[ -f "$o.pulls1.err" ] && cp "$o.pulls1.err" "$o.pulls1.kept.err"
	check_same "$label: ${n[0]}${T_EXPIRED:+ (but $T_EXPIRED)}" "$ref.pulls1.kept" "$o.pulls1.kept"
	check "$label: ${n[1]}" "$(expired_count "$o.pulls1")" 1
	for dev in $T_EXPIRED; do
		check "$label: $dev (a paused bootstrap of a registered client) is told CHECKPOINT_EXPIRED" \
			"$(grep -c "^$dev page 1: .*\"signal\": {\"type\": \"CHECKPOINT_EXPIRED\"}" "$o.pulls1") $(grep -c "^$dev page 1: .*\"signal\": {\"type\": \"CHECKPOINT_EXPIRED\"}" "$o.pulls2")" "1 1"
	done
	check_same "$label: ${n[2]}${T_EXPIRED:+ (but $T_EXPIRED)}" "$ref.pulls2.kept" "$o.pulls2.kept"
	for dev in A1 A3 A4 B1; do
		if [[ " $T_EXPIRED " = *" $dev "* ]]; then got+="$dev $(count_pk "$o.rebootstrap" "$dev" "$NNEW") (bootstrapping again), "
		else got+="$dev $(count_pk "$o.pulls2" "$dev" "$NNEW"), "; fi
	done
	check "$label: ${n[3]}" "${got%, }" \
		"$(for dev in A1 A3 A4 B1; do if [ $dev = B1 ]; then w=0; else w=1; fi
			[[ " $T_EXPIRED " = *" $dev "* ]] && w="$w (bootstrapping again)"; printf '%s %s, ' $dev "$w"; done | sed 's/, $//')"
	check "$label: ${n[4]}" \
		"pages $(grep -c ' page ' "$o.pulls3"), empty $(grep -c '"rows": \[\], .*"tombstones": \[\]' "$o.pulls3")" \
		"pages 5, empty 5"
	check "$label: ${n[5]}" \
		"$(grep -v '^replay [a-z0-9]*: ' "$o.replays" | tr '\n' ';')$(head -c 300 "$o.replays.err")" \
		"replay p03 verdicts as recorded: true;replay p06 verdicts as recorded: true;change_seq moved: false;"
	check_same "$label: ${n[6]}" "$ref.replays" "$o.replays"
	check "$label: ${n[7]}" \
		"$(grep '^journal ' "$o.new2" || { echo "no journal entry; push answered: $(grep -m 1 '^{' "$o.new2")"; head -n 2 "$o.new2.err"; })" \
		"$(grep '^journal ' "$ref.new2")"
}
