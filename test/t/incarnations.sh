#!/usr/bin/env bash
# shellcheck disable=SC2016  # SQL in single quotes is meant literally
# Issue 12 item 4 (decisions/0084): cursors this database's history cannot
# have produced answer CHECKPOINT_EXPIRED, never a silent skip.
#   a. DROP EXTENSION kizunasync CASCADE; CREATE EXTENSION kizunasync; and
#      re-provisioning: the new incarnation's seqs lie above every seq of
#      the old one; every old cursor (current, holed, delta continuation,
#      bootstrap continuation) answers CHECKPOINT_EXPIRED; a new bootstrap
#      gets every row; new cursors work; an old mutation id applies again
#      (the documented limit: verdicts die with the incarnation);
#   b. cursors from the future (above the sequence: "999999999999" when
#      the sequence is below it, the largest bigint, a start or a holed
#      cursor above it) answer CHECKPOINT_EXPIRED;
#   c. a restore into a database whose history differs: a dump of database
#      A restored into R; A's cursors continue in R exactly as in A; the
#      cursors of B (installed before A) and C (installed after the dump)
#      answer CHECKPOINT_EXPIRED in R.
# Operational steps run as the non-superuser database owner, clients in the
# Data API shape; the superuser drops and creates the extension (as
# Supabase's platform does), dumps and restores.
T_NAME=incarnations
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_inc_owner}
A=kz_t_inc_a B=kz_t_inc_b C=kz_t_inc_c R=kz_t_inc_r
owner_role "$T_OWNER" || bail "cannot create role $T_OWNER"
BA="[{\"table\": \"notes\", \"params\": {\"owner_id\": \"$UA\"}}]"
mid() { printf '00000000-0000-4000-8000-f%011d' "$1"; }

# provision DB: the owner's table, synced, with two rows of user a
provision() {
	qo "$1" <<SQL
SET client_min_messages = warning;
CREATE TABLE IF NOT EXISTS public.notes (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text NOT NULL);
ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS own ON public.notes;
CREATE POLICY own ON public.notes FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.notes TO authenticated;
INSERT INTO public.notes VALUES (1, '$UA', 'one'), (2, '$UA', 'two') ON CONFLICT DO NOTHING;
SELECT kizunasync.sync_table('public.notes', bucket_column => 'owner_id') IS NOT NULL AS synced;
SQL
}
# pull DB CURSOR [LIMIT]: one Data API pull of user a's bucket; prints
# "signal=S rows=N tombstones=M has_more=B" and the cursor on a second line
pull() {
	q "$1" <<SQL
$(api pull "$UA" "kizunasync.pull(buckets => '$BA', cursor => '$2', schema_version => 1, \"limit\" => ${3:-100})")
SELECT format('signal=%s rows=%s tombstones=%s has_more=%s', coalesce(:'r'::jsonb -> 'signal' ->> 'type', 'none'),
	jsonb_array_length(:'r'::jsonb -> 'rows'), jsonb_array_length(:'r'::jsonb -> 'tombstones'),
	:'r'::jsonb ->> 'has_more'), :'r'::jsonb ->> 'cursor';
SQL
}
pull_full() {	# pull DB CURSOR [LIMIT]: the whole response
	q "$1" <<SQL
$(api pull "$UA" "kizunasync.pull(buckets => '$BA', cursor => '$2', schema_version => 1, \"limit\" => ${3:-100})")
\echo :r
SQL
}
summary() { pull "$@" 2>&1 | head -n 1 | sed 's/|.*//'; }
cursor_of() { pull "$@" 2>/dev/null | head -n 1 | sed 's/^[^|]*|//'; }
push() {	# push DB MID OP ID [V]
	local cols=""
	[ "$3" = delete ] || cols=", \"columns\": {\"owner_id\": \"$UA\", \"v\": \"$5\"}"
	q "$1" <<SQL
$(api push "$UA" "kizunasync.push(batch => '{\"mutations\": [{\"mutation_id\": \"$(mid "$2")\", \"table\": \"notes\", \"pk\": \"$4\", \"op\": \"$3\"$cols}]}'::jsonb, last_mutation_id => NULL, schema_version => 1)")
\echo :r
SQL
}
last_seq() { q "$1" -c "SELECT last_value FROM kizunasync.change_seq"; }

# ------------------------------------------------------------------ B, then A
owned_appdb "$B" "$T_OWNER" && provision "$B" >/dev/null || bail "cannot set up $B"
push "$B" 90 insert 3 "b three" >/dev/null
CB=$(cursor_of "$B" 0)
owned_appdb "$A" "$T_OWNER" && provision "$A" >/dev/null || bail "cannot set up $A"
check "setup: B's cursor is a plain high-water" "$(printf '%s' "$CB" | grep -c '^[0-9][0-9]*$')" "1"

# ------------------------------------------------------------------ a. old cursors
# pulls answer at once while a writer holds its transaction (no long poll
# here; on a library without configure() this fails and changes nothing)
qo "$A" -c "SELECT kizunasync.configure(pull_wait_ms => 0) IS NOT NULL" > "$T_OUT/configure.out" 2>&1
push "$A" 1 insert 3 "three" > "$T_OUT/push1.out"
push "$A" 2 insert 4 "four" > "$T_OUT/push2.out"
C_CUR=$(cursor_of "$A" 0)
C_BOOT=$(cursor_of "$A" 0 1)
push "$A" 3 insert 5 "five" >/dev/null
push "$A" 4 update 1 "one, edited" >/dev/null
C_CONT=$(cursor_of "$A" "$C_CUR" 1)
# a holed cursor: a writer holds a change of the bucket while a later one commits
sess_open holder "$A" "$T_OWNER"
sess_send holder "BEGIN; INSERT INTO public.notes VALUES (6, '$UA', 'held');"
sess_sync holder
push "$A" 5 insert 7 "seven" >/dev/null
C_HOLED=$(cursor_of "$A" "$C_CUR")
sess_send holder "COMMIT;"; sess_sync holder; sess_close holder
C_LAST=$(cursor_of "$A" "$C_CUR")
OLD_L=$(last_seq "$A")
note "old incarnation: cursors current $C_CUR, bootstrap continuation $C_BOOT, delta continuation $C_CONT, holed $C_HOLED, last $C_LAST; change_seq at $OLD_L"
check "a: the old cursors have the shapes under test (hw, 0:pos, start:pos, hw~holes)" \
	"$(printf '%s\n' "$C_CUR" "$C_BOOT" "$C_CONT" "$C_HOLED" | sed -e 's/^[0-9][0-9]*$/hw/' -e 's/^0:[0-9][0-9]*$/0:pos/' -e 's/^[1-9][0-9]*:[0-9][0-9]*$/start:pos/' -e 's/^[0-9][0-9]*~[0-9,]*$/hw~holes/' | tr '\n' ' ')" \
	"hw 0:pos start:pos hw~holes "
check "a: before the re-creation the old cursors are served (current cursor: no signal)" "$(summary "$A" "$C_LAST")" "signal=none rows=0 tombstones=0 has_more=false"

q "$A" -c "DROP EXTENSION kizunasync CASCADE" > "$T_OUT/drop.out" 2>&1
q "$A" -c "CREATE EXTENSION kizunasync" >> "$T_OUT/drop.out" 2>&1
check "a: the superuser drops and re-creates the extension" "$?" "0"
provision "$A" > "$T_OUT/reprovision.out" 2>&1
check "a: the owner provisions the table again" "$?:$(grep -c ERROR "$T_OUT/reprovision.out")" "0:0"
first_new=$(q "$A" -c "SELECT min(seq) FROM kizunasync.changelog")
check_true "a: the new incarnation's first seq ($first_new) lies above every seq of the old one (change_seq was at $OLD_L)" \
	test "${first_new:-0}" -gt "$OLD_L"
for c in "current:$C_CUR" "last:$C_LAST" "bootstrap continuation:$C_BOOT" "delta continuation:$C_CONT" "holed:$C_HOLED"; do
	check "a: the old ${c%%:*} cursor ${c#*:} answers CHECKPOINT_EXPIRED" "$(summary "$A" "${c#*:}")" \
		"signal=CHECKPOINT_EXPIRED rows=0 tombstones=0 has_more=false"
done
check "a: a new bootstrap gets every row (7)" "$(summary "$A" 0)" "signal=none rows=7 tombstones=0 has_more=false"
NEW_CUR=$(cursor_of "$A" 0)
push "$A" 6 insert 8 "eight, new life" >/dev/null
check "a: the new incarnation's cursor is served (the new row)" "$(summary "$A" "$NEW_CUR")" "signal=none rows=1 tombstones=0 has_more=false"
check "a: an old mutation id sent again is applied again (documented: verdicts die with the incarnation)" \
	"$(push "$A" 1 insert 9 "nine" | sed -n 's/.*"verdict": "\([a-z]*\)".*/\1/p')" "applied"

# ------------------------------------------------------------------ b. the future
L=$(last_seq "$A")
F=$((L + 1000000))
for c in "999999999999" "$F" "9223372036854775807" "$F:$F" "$F~$L" "$((L + 1)):$((L + 5))"; do
	check "b: a cursor from the future ($c; change_seq at $L) answers CHECKPOINT_EXPIRED" "$(summary "$A" "$c")" \
		"signal=CHECKPOINT_EXPIRED rows=0 tombstones=0 has_more=false"
done
check "b: the current high-water itself is served" "$(summary "$A" "$L")" "signal=none rows=0 tombstones=0 has_more=false"

# ------------------------------------------------------------------ c. restore
pg_dump -Fc -f "$T_OUT/a.dump" "$A" 2> "$T_OUT/a.dump.err"
dropdb --if-exists --force "$R" >/dev/null 2>&1
createdb -T template0 -O "$T_OWNER" "$R" && T_DBS+=("$R")
pg_restore --single-transaction --exit-on-error -d "$R" "$T_OUT/a.dump" > "$T_OUT/r.restore.out" 2>&1
check "c: A's dump restores strictly into R" "$?:$(head -c 300 "$T_OUT/r.restore.out")" "0:"
owned_appdb "$C" "$T_OWNER" && provision "$C" >/dev/null
CC=$(cursor_of "$C" 0)
check "c: A's current cursor continues in R exactly as in A" "$(pull_full "$R" "$NEW_CUR" 2>&1)" "$(pull_full "$A" "$NEW_CUR" 2>&1)"
check "c: a cursor of B (installed before A: $CB) answers CHECKPOINT_EXPIRED in R" "$(summary "$R" "$CB")" \
	"signal=CHECKPOINT_EXPIRED rows=0 tombstones=0 has_more=false"
check "c: a cursor of C (installed after the dump: $CC) answers CHECKPOINT_EXPIRED in R" "$(summary "$R" "$CC")" \
	"signal=CHECKPOINT_EXPIRED rows=0 tombstones=0 has_more=false"
push "$R" 7 insert 10 "ten, in R" >/dev/null
check "c: after a write in R, C's cursor still answers CHECKPOINT_EXPIRED there" "$(summary "$R" "$CC")" \
	"signal=CHECKPOINT_EXPIRED rows=0 tombstones=0 has_more=false"

finish
