#!/usr/bin/env bash
# shellcheck disable=SC2028  # echo prints psql backslash commands literally
# Upgrade from every released version (issue 12 item 2).  For each frozen
# release script sql/kizunasync--X.Y.Z.sql (today: 0.1.0):
#   1. kz_t_up_old: CREATE EXTENSION kizunasync VERSION 'X.Y.Z' (the frozen
#      script, run against the current library), then the history of
#      test/t/history.sh through that version's SQL API (0.1.0: settings are
#      changed with UPDATE kizunasync.settings);
#   2. kz_t_up_ref: a copy of it (CREATE DATABASE ... TEMPLATE) that is never
#      upgraded: what a database on the new library answers before its
#      ALTER EXTENSION;
#   3. ALTER EXTENSION kizunasync UPDATE in kz_t_up_old;
#   4. kz_t_up_new: a fresh CREATE EXTENSION kizunasync (default_version);
# then checks: the upgraded database has exactly the objects of the fresh
# install (test/t/schema_objects.sql, a catalog listing, and pg_dump
# --binary-upgrade --schema-only of the extension, OIDs masked); the
# bookkeeping and settings survived the update; devices continue from their
# old cursors exactly as in the never-upgraded twin, replays answer from the
# ledger; the upgraded database round-trips through a strict dump/restore,
# and so does a dump taken on the old version restored with the current
# files (pg_dump writes CREATE EXTENSION without a version).
# A self-test shows that the comparison sees a changed object.
# The frozen scripts must stay byte-identical to what was released
# (test/t/released.sha256).
# TAP output; exit status 0 when everything passed.  Needs the test cluster
# (PGHOST, PGPORT, PGUSER) and the extension installed (make install puts
# every sql/kizunasync--*.sql in place).  KZ_T_KEEP=1 keeps the databases.
T_NAME=upgrade
# shellcheck source=test/t/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=test/t/history.sh
. "$T_DIR/history.sh"
O=$T_OUT
OLD=kz_t_up_old REF=kz_t_up_ref NEW=kz_t_up_new
DEFAULT=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$T_ROOT/kizunasync.control")
EXTDIR=$(pg_config --sharedir)/extension

schema_objects() { q "$1" -f "$T_DIR/schema_objects.sql"; }
# the extension's members as pg_dump --binary-upgrade writes them (pg_upgrade's
# view of the extension), with OIDs, random \restrict keys and sequence state
# masked
dump_members() {
	pg_dump --binary-upgrade --schema-only -e kizunasync -n kizunasync -d "$1" |
		grep -v '^\\restrict \|^\\unrestrict \|binary_upgrade_set_next_\|pg_catalog.setval(' |
		sed -E -e "s/(binary_upgrade_create_empty_extension\('kizunasync', 'kizunasync', (true|false), '[^']*', )'\{[0-9,]*\}'/\1'{<config oids>}'/" \
			-e "s/relfrozenxid = '[0-9]+', relminmxid = '[0-9]+'/relfrozenxid = <xid>, relminmxid = <mxid>/" \
			-e "s/^WHERE oid = '[0-9]+';/WHERE oid = <toast oid>;/"
}
contents() { q "$1" -v schemas="$2" -f "$T_DIR/contents.sql"; }

# ---------------------------------------------------------------- releases
check "the frozen release scripts are byte-identical to what was released (test/t/released.sha256)" \
	"$(cd "$T_ROOT" && sha256sum -c --quiet test/t/released.sha256 2>&1)" ""
releases=$(for f in "$T_ROOT"/sql/kizunasync--*.sql; do basename "$f"; done | grep -E '^kizunasync--[0-9.]+\.sql$' |
	sed -E 's/^kizunasync--(.*)\.sql$/\1/' | grep -vx "$DEFAULT" | sort -V)
check "every release script is installed as shipped ($(tr '\n' ' ' <<< "$releases" | sed 's/ $//'))" \
	"$(for v in $releases; do cmp -s "$T_ROOT/sql/kizunasync--$v.sql" "$EXTDIR/kizunasync--$v.sql" || echo "$v differs or is missing in $EXTDIR"; done)" ""

# One library serves every version's SQL objects (a database is updated
# after the new library is installed, or never): every C function a release
# or upgrade script declares must exist in the installed library, with its
# V1 info function.
LIB=$(pg_config --pkglibdir)/kizunasync.so
syms=$(cd "$T_ROOT/sql" && grep -ohE "'(MODULE_PATHNAME|\\\$libdir/kizunasync)', *'[A-Za-z0-9_]+'" kizunasync--*.sql |
	sed -E "s/.*'([A-Za-z0-9_]+)'$/\1/" | sort -u)
exported=$(nm -D --defined-only "$LIB" 2>/dev/null | awk '$2 == "T" {print $3}')
if ! command -v nm >/dev/null; then
	skip "every C symbol named by a release or upgrade script is exported by the library" "nm (binutils) is not installed"
else check "every C symbol named by a release or upgrade script is exported by $LIB ($(echo "$syms" | wc -l | tr -d ' ') symbols)" \
	"$(for f in $syms; do for x in "$f" "pg_finfo_$f"; do grep -qx "$x" <<< "$exported" || echo "missing: $x"; done; done)" ""
fi

for from in $releases; do
	L="$from -> $DEFAULT"
	echo "# upgrade $L"
	appdb $OLD
	rc=0; q $OLD -c "SET client_min_messages = warning; CREATE EXTENSION kizunasync VERSION '$from'" > "$O/create-$from.log" 2>&1 || rc=$?
	check "$L: CREATE EXTENSION kizunasync VERSION '$from' (frozen script, current library)" \
		"$rc $(q $OLD -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'")" "0 $from"
	check "$L: an update path exists ($(q $OLD -c "SELECT coalesce(path, 'none') FROM pg_extension_update_paths('kizunasync') WHERE source = '$from' AND target = '$DEFAULT'"))" \
		"$(q $OLD -c "SELECT path IS NOT NULL FROM pg_extension_update_paths('kizunasync') WHERE source = '$from' AND target = '$DEFAULT'")" t
	# the history through the old version's SQL API (0.1.0 has no
	# configure(): settings are changed with UPDATE kizunasync.settings)
	if [ -n "$(configure_decl $OLD)" ]; then sapi=configure; else sapi=update; fi
	history_sql $sapi > "$O/history-$from.sql"
	if ! q $OLD -f "$O/history-$from.sql" > "$O/history-$from.out" 2>&1; then
		notok "$L: the history builds on $from" "$(grep -m 3 'ERROR\|FATAL' "$O/history-$from.out")"
		continue
	fi
	ok "$L: the history builds on $from ($(q $OLD -c "SELECT count(*) FROM kzt.calls") requests)"
	contents $OLD kizunasync > "$O/before.bookkeeping"
	dropdb --if-exists --force $REF >/dev/null 2>&1
	createdb -T $OLD $REF && T_DBS+=("$REF")

	rc=0; q $OLD -c "ALTER EXTENSION kizunasync UPDATE" > "$O/update-$from.log" 2>&1 || rc=$?
	check "$L: ALTER EXTENSION kizunasync UPDATE succeeds and reaches $DEFAULT" \
		"$rc $(q $OLD -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'")" "0 $DEFAULT"
	[ $rc -eq 0 ] || note "$(head -n 5 "$O/update-$from.log")"

	appdb $NEW
	q $NEW -c "SET client_min_messages = warning; CREATE EXTENSION kizunasync" >/dev/null
	check "$L: after the update, kizunasync.configure(...) has the decided signature" "$(configure_decl $OLD)" "$CONFIGURE_DECL"
	schema_objects $NEW > "$O/fresh.objects" 2> "$O/fresh.objects.err"
	schema_objects $OLD > "$O/upgraded.objects" 2> "$O/upgraded.objects.err"
	T_DIFF_LINES=60 check_same "$L: the upgraded extension has exactly the objects of a fresh $DEFAULT install (catalog; - fresh, + upgraded)" \
		"$O/fresh.objects" "$O/upgraded.objects"
	dump_members $NEW > "$O/fresh.members.sql" 2>&1
	dump_members $OLD > "$O/upgraded.members.sql" 2>&1
	T_DIFF_LINES=30 check_same "$L: pg_dump --binary-upgrade of the extension's members is identical (- fresh, + upgraded)" \
		"$O/fresh.members.sql" "$O/upgraded.members.sql"

	# nothing lost by the update itself (settings and the horizon are
	# compared by effect: their rows may legitimately be normalized)
	contents $OLD kizunasync > "$O/after.bookkeeping"
	grep -v '^kizunasync.settings \|^kizunasync.reap_state ' "$O/before.bookkeeping" > "$O/before.bookkeeping.kept"
	grep -v '^kizunasync.settings \|^kizunasync.reap_state ' "$O/after.bookkeeping" > "$O/after.bookkeeping.kept"
	check_same "$L: the update keeps every bookkeeping row and sequence (settings and reap_state aside)" \
		"$O/before.bookkeeping.kept" "$O/after.bookkeeping.kept"
	check "$L: the reap horizon survives the update" \
		"$(q $OLD -c "SELECT coalesce((SELECT reaped_seq FROM kizunasync.reap_state), 0)")" \
		"$(q $REF -c "SELECT reaped_seq FROM kizunasync.reap_state")"
	check "$L: settings changed on $from are the effective settings after the update (configure())" \
		"$(q $OLD -c "SELECT kizunasync.configure() @> '{\"max_pull_limit\": 4000, \"max_batch_size\": 250, \"client_ttl_days\": 120, \"hlc_max_skew_ms\": 8000, \"tombstone_ttl_days\": 20, \"reap_schedule\": \"5 4 * * *\", \"compact_schedule\": \"15 4 * * *\"}'" 2>&1 | head -n 1)" t
	check "$L: configure() changes a setting on the upgraded database" \
		"$(q $OLD -c "SELECT kizunasync.configure(max_pull_scan => 4500) ->> 'max_pull_scan'" 2>&1 | head -n 1) $(q $OLD -c "SELECT kizunasync.configure(max_pull_scan => 5000) ->> 'max_pull_scan'" 2>&1 | head -n 1)" \
		"4500 5000"

	# devices continue: the never-upgraded twin is the reference
	continue_steps $REF
	check "$L: a database not yet updated keeps serving pulls and pushes on the current library" \
		"$(cat "$O/$REF".{pulls1,new1,pulls2,replays}.err | grep -m 3 'ERROR' ; grep -c ' page 1: ' "$O/$REF.pulls1")" "5"
	continue_steps $OLD
	continue_checks "$L" $REF "the never-upgraded twin" $OLD

	# the upgraded database round-trips through a strict dump/restore
	newdb kz_t_up_restored
	pg_dump -Fc -d $OLD -f "$O/upgraded.dump"
	if pg_restore --single-transaction --exit-on-error -d kz_t_up_restored "$O/upgraded.dump" > "$O/upgraded.restore.log" 2>&1; then
		ok "$L: the upgraded database restores strictly (custom format)"
	else
		notok "$L: the upgraded database restores strictly (custom format)" "$(grep -m 3 -i 'error\|detail' "$O/upgraded.restore.log")"
	fi
	contents $OLD kizunasync > "$O/upgraded.bookkeeping"
	contents kz_t_up_restored kizunasync > "$O/upgraded-restored.bookkeeping" 2> "$O/upgraded-restored.bookkeeping.err"
	check_same "$L: the upgraded database, restored: every bookkeeping row and sequence equal" "$O/upgraded.bookkeeping" "$O/upgraded-restored.bookkeeping"

	# a dump taken on the old version, restored where the current files are
	# installed: pg_dump writes CREATE EXTENSION without VERSION, so the
	# restore installs $DEFAULT and loads $from's bookkeeping into it
	newdb kz_t_up_olddump
	pg_dump -Fc -d $REF -f "$O/old.dump"
	if pg_restore --single-transaction --exit-on-error -d kz_t_up_olddump "$O/old.dump" > "$O/old.restore.log" 2>&1; then
		ok "$L: a dump taken on $from restores strictly into $DEFAULT (custom format)"
	else
		notok "$L: a dump taken on $from restores strictly into $DEFAULT (custom format)" "$(grep -m 3 -i 'error\|detail' "$O/old.restore.log")"
	fi
	# (the journal's identity sequence is not in a 0.1.0 dump: its state is
	# left out here and judged by its effect below)
	contents $REF kizunasync | grep -v '^kizunasync.conflict_journal_id_seq ' > "$O/old.bookkeeping"
	contents kz_t_up_olddump kizunasync 2> "$O/old-restored.bookkeeping.err" |
		grep -v '^kizunasync.conflict_journal_id_seq ' > "$O/old-restored.bookkeeping"
	check_same "$L: the $from dump, restored into $DEFAULT: every bookkeeping row and change_seq equal" "$O/old.bookkeeping" "$O/old-restored.bookkeeping"
	# the journal's identity sequence was not registered for dump on 0.1.0:
	# a journaled write must still be recorded, not rejected
	{ push pold "$UA" "$A1" '{"mutations": [
		{"mutation_id": "'"$(mid 903)"'", "table": "tasks", "pk": "1", "op": "update", "columns": {"title": "buy almond milk"}, "hlc": "2024-01-03T00:00:00.000Z|0|dev-a1"}]}'
	  echo "\\echo :r"
	  echo "SELECT 'journal ' || column_name || ' ' || loser_value FROM kizunasync.conflict_journal WHERE winner_mutation_id = '$(mid 903)';"
	} | run_sql kz_t_up_olddump "$O/old-restored.journal"
	check "$L: the $from dump, restored into $DEFAULT: a journaled write is applied and journaled" \
		"$(grep -m 1 '^{' "$O/old-restored.journal" | grep -o '"verdict": "[a-z]*"\|"reason": "[A-Z_]*"' | tr '\n' ' ')$(grep '^journal ' "$O/old-restored.journal")$(head -n 1 "$O/old-restored.journal.err")" \
		'"verdict": "applied" journal title "buy rice milk"'
done

# ---------------------------------------------------------------- self-test
# The comparison must see what an incomplete upgrade script leaves behind:
# a changed function attribute, a new column, a changed grant, an object
# that is no longer a member (and its config-dump registration).
appdb kz_t_up_self
q kz_t_up_self -c "SET client_min_messages = warning; CREATE EXTENSION kizunasync" >/dev/null
schema_objects kz_t_up_self > "$O/self.before"
q kz_t_up_self > "$O/self.after" 2>&1 <<SQL
SET client_min_messages = warning;
BEGIN;
ALTER FUNCTION kizunasync.cursor_parse(text) SET work_mem = '1MB';
ALTER TABLE kizunasync.clients ADD COLUMN note text;
GRANT EXECUTE ON FUNCTION kizunasync.cursor_encode(bigint, bigint, bigint[]) TO authenticated;
ALTER EXTENSION kizunasync DROP TABLE kizunasync.attachments;
\i $T_DIR/schema_objects.sql
ROLLBACK;
SQL
diff "$O/self.before" "$O/self.after" > "$O/self.diff"
check "self-test: the comparison reports a changed function setting, a new column, a changed grant, a lost member and its config-dump registration" \
	"$(for pat in '^> function kizunasync.cursor_parse(text) |  SET work_mem' '^> kizunasync.clients column #7 note' \
		'^[<>] function kizunasync.cursor_encode.*authenticated=EXECUTE' '^< member table kizunasync.attachments' \
		'^> non-member table kizunasync.attachments' "^< config-dump kizunasync.attachments"; do
		grep -q -- "$pat" "$O/self.diff" || echo "missed: $pat"; done)" ""

finish
