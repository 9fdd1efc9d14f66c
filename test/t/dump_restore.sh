#!/usr/bin/env bash
# Dump/restore round trip of a database with synced tables and history
# (issue 12 item 1).  Builds the history of test/t/history.sh in
# kz_t_dump_src, dumps it, and restores it into fresh databases:
#   custom   pg_dump -Fc; pg_restore --single-transaction --exit-on-error
#   plain    pg_dump -Fp; psql -v ON_ERROR_STOP=1 -f dump.sql
#   split    pg_dump --schema-only, pg_dump --data-only, restored as Supabase
#            documents it: psql --single-transaction -v ON_ERROR_STOP=1
#            -f schema.sql -c 'SET session_replication_role = replica' -f data.sql
#   lenient  pg_restore without --single-transaction/--exit-on-error: what a
#            user who lets a restore run past its errors ends up with
# Per strict restore: the restore succeeds; every bookkeeping row and
# sequence, the effective settings and the application data equal the
# original's; then the original and the restored database get the same
# requests (test/t/history.sh continue_steps) and must answer the same:
# pulls from every recorded device cursor (the expired one still
# CHECKPOINT_EXPIRED), a new write delivered to the old cursors exactly
# once, replayed mutation ids answered from the ledger, a new
# conflict-journal entry.  Also: a database with the extension only just
# installed round-trips.
# TAP output ("ok N - ..."); exit status 0 when everything passed.  Needs
# the test cluster (PGHOST, PGPORT, PGUSER), the extension installed.
# KZ_T_KEEP=1 keeps the databases; outputs land in test/out/t/dump_restore.
#
# Across majors (issue 22): with KZ_T_SRC_PGHOST and KZ_T_SRC_PGPORT set,
# the original databases are built on that server (PostgreSQL 15, the
# extension installed there too), dumped from it with this installation's
# pg_dump (17's, as PostgreSQL's upgrade notes advise) and restored into the
# test cluster (17); everything else is the same.  The pg17 lane runs it so
# (test/lanes/pg17.sh, lane "cross").
T_NAME=${T_NAME:-dump_restore}
# shellcheck source=test/t/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=test/t/history.sh
. "$T_DIR/history.sh"
SRC=kz_t_dump_src
O=$T_OUT
bare=kz_t_dump_bare_src

if [ -n "${KZ_T_SRC_PGHOST:-}" ]; then
	# the originals ($SRC, $bare) live on the other server
	on_src() { PGHOST=$KZ_T_SRC_PGHOST PGPORT=${KZ_T_SRC_PGPORT:?} "$@"; }
	is_src() { [ "$1" = "$SRC" ] || [ "$1" = "$bare" ]; }
	eval "$(declare -f q | sed '1s/^q /here_q /')"
	eval "$(declare -f newdb | sed '1s/^newdb /here_newdb /')"
	q() { if is_src "$1"; then on_src here_q "$@"; else here_q "$@"; fi; }
	newdb() {
		if ! is_src "$1"; then here_newdb "$1"; return; fi
		on_src dropdb --if-exists --force "$1" >/dev/null 2>&1
		on_src createdb -T template0 "$1" && at_finish "on_src dropdb --if-exists --force $1"
	}
	src_major=$(on_src here_q postgres -c "SELECT current_setting('server_version_num')::int / 10000" 2>&1)
	dst_major=$(here_q postgres -c "SELECT current_setting('server_version_num')::int / 10000" 2>&1)
	dump_major=$(pg_dump --version | sed -n 's/.* \([0-9][0-9]*\)\.[0-9].*/\1/p')
	if [ -n "$src_major" ] && [ -n "$dst_major" ] && [ "$src_major" -lt "$dst_major" ] 2>/dev/null; then
		ok "across majors: the originals on PostgreSQL $src_major, dumped with pg_dump $dump_major, restored into PostgreSQL $dst_major"
	else
		notok "across majors: the original's server is an older major than the restores'" \
			"original ($KZ_T_SRC_PGHOST port $KZ_T_SRC_PGPORT): $src_major" "restores: $dst_major"
		finish; exit
	fi
else
	on_src() { "$@"; }
fi

contents() { q "$1" -v schemas="$2" -f "$T_DIR/contents.sql"; }
# effective settings: configure() with no change (0.2.0), rolled back; the
# settings row itself where configure() does not exist (0.1.0)
effective_settings() {
	q "$1" <<SQL
SELECT to_regproc('$CONFIGURE_NAME') IS NOT NULL AS has_configure \gset
\if :has_configure
BEGIN;
SELECT kizunasync.configure();
ROLLBACK;
\else
SELECT 'no configure(); settings row: ' || coalesce((SELECT (to_jsonb(s) - 'id')::text FROM kizunasync.settings s), 'none');
\endif
SQL
}
# restore FORM DB: run the form's restore into DB (log: $O/DB.restore.log)
restore() {
	local form=$1 db=$2
	case $form in
		custom) pg_restore --single-transaction --exit-on-error -d "$db" "$O/src.dump" ;;
		plain) psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$O/src.sql" ;;
		split) psql -X -q --single-transaction -v ON_ERROR_STOP=1 -d "$db" \
			-f "$O/schema.sql" -c 'SET session_replication_role = replica' -f "$O/data.sql" ;;
		lenient) pg_restore -d "$db" "$O/src.dump" ;;
	esac > "$O/$db.restore.log" 2>&1
}

# ---------------------------------------------------------------- the original
echo "# building the history in $SRC"
appdb $SRC
q $SRC -c "SET client_min_messages = warning; CREATE EXTENSION kizunasync" >/dev/null
check "fresh install: kizunasync.settings and kizunasync.reap_state have no rows (defaults apply while absent)" \
	"$(q $SRC -c "SELECT (SELECT count(*) FROM kizunasync.settings) || ' ' || (SELECT count(*) FROM kizunasync.reap_state)")" "0 0"
decl=$(configure_decl $SRC)
check "kizunasync.configure(...) exists with the decided signature" "$decl" "$CONFIGURE_DECL"
if [ -n "$decl" ]; then
	SAPI=configure
else
	note "no configure(): the history changes settings with UPDATE kizunasync.settings instead"
	SAPI=update
fi
history_sql $SAPI > "$O/history.sql"
if ! q $SRC -f "$O/history.sql" > "$O/history.out" 2>&1; then
	notok "the history builds" "$(tail -n 5 "$O/history.out")"
	finish; exit
fi
ok "the history builds ($(q $SRC -c "SELECT count(*) FROM kzt.calls") requests)"
check "history: the reap raised the horizon above A2's cursor, not above A1's, A3's or B1's" \
	"$(q $SRC -c "SELECT string_agg(device || ' ' || (coalesce(c.start, c.high_water) < (SELECT reaped_seq FROM kizunasync.reap_state)), ', ' ORDER BY device)
	                FROM kzt.devices, kizunasync.cursor_parse(cursor) c WHERE device IN ('A1', 'A2', 'A3', 'B1')")" \
	"A1 false, A2 true, A3 false, B1 false"
check "history: A3 and A4 hold mid-page continuation cursors" \
	"$(q $SRC -c "SELECT string_agg(device || ' ' || (cursor ~ '^[0-9]+:[0-9]+'), ', ' ORDER BY device) FROM kzt.devices WHERE device IN ('A3', 'A4')")" \
	"A3 true, A4 true"

on_src pg_dump -Fc -d $SRC -f "$O/src.dump"
on_src pg_dump -Fp -d $SRC -f "$O/src.sql"
on_src pg_dump --schema-only -d $SRC -f "$O/schema.sql"
on_src pg_dump --data-only -d $SRC -f "$O/data.sql"
contents $SRC kizunasync > "$O/src.bookkeeping"
contents $SRC public,storage,auth,kzt > "$O/src.appdata"
effective_settings $SRC > "$O/src.settings"
continue_steps $SRC
check "original: A2 (below the reap horizon) is told CHECKPOINT_EXPIRED" "$(expired_count "$O/$SRC.pulls1")" 1

# ---------------------------------------------------------------- restores
for form in custom plain split lenient; do
	db=kz_t_dump_$form
	echo "# $form: restore into $db"
	newdb "$db"
	rc=0; restore $form "$db" || rc=$?
	if [ $form = lenient ]; then
		if [ $rc -eq 0 ] && ! grep -qi 'error' "$O/$db.restore.log"; then ok "$form: pg_restore reports no error"
		else notok "$form: pg_restore reports no error" "$(grep -m 3 -i 'error' "$O/$db.restore.log")"; fi
	elif [ $rc -eq 0 ]; then
		ok "$form: the strict restore succeeds"
	else
		notok "$form: the strict restore succeeds" "exit $rc: $(grep -m 3 -i 'error\|detail' "$O/$db.restore.log")"
	fi
	contents "$db" kizunasync > "$O/$db.bookkeeping" 2> "$O/$db.bookkeeping.err"
	check_same "$form: every bookkeeping row and sequence equals the original's" "$O/src.bookkeeping" "$O/$db.bookkeeping"
	check "$form: change_seq last_value equals the original's" \
		"$(grep '^kizunasync.change_seq ' "$O/$db.bookkeeping")" "$(grep '^kizunasync.change_seq ' "$O/src.bookkeeping")"
	effective_settings "$db" > "$O/$db.settings" 2> "$O/$db.settings.err"
	check_same "$form: effective settings equal the original's" "$O/src.settings" "$O/$db.settings"
	if [ $form = lenient ]; then
		device_pulls "$db" | run_sql "$db" "$O/$db.pulls1"
		check_same "$form: pulls from the recorded cursors answer as in the original" "$O/$SRC.pulls1" "$O/$db.pulls1"
		check "$form: A2 (below the reap horizon) is still told CHECKPOINT_EXPIRED" "$(expired_count "$O/$db.pulls1")" 1
		continue
	fi
	contents "$db" public,storage,auth,kzt > "$O/$db.appdata" 2> "$O/$db.appdata.err"
	check_same "$form: application, Storage and auth data equal the original's" "$O/src.appdata" "$O/$db.appdata"
	if [ $rc -eq 0 ]; then
		continue_steps "$db"
		continue_checks "$form" $SRC "the original" "$db"
	else
		continue_checks "$form" $SRC "the original" "$db" "the restore failed"
	fi
done

# ---------------------------------------------------------------- just installed
db=kz_t_dump_bare
appdb $bare
q $bare -c "SET client_min_messages = warning; CREATE EXTENSION kizunasync" >/dev/null
on_src pg_dump -Fc -d $bare -f "$O/bare.dump"
newdb $db
if pg_restore --single-transaction --exit-on-error -d $db "$O/bare.dump" > "$O/bare.restore.log" 2>&1; then
	ok "a database with the extension just installed restores strictly (custom)"
else
	notok "a database with the extension just installed restores strictly (custom)" "$(grep -m 2 -i 'error' "$O/bare.restore.log")"
fi
check "just installed, restored: settings and reap_state have no rows" \
	"$(q $db -c "SELECT (SELECT count(*) FROM kizunasync.settings) || ' ' || (SELECT count(*) FROM kizunasync.reap_state)" 2>&1 | head -n 1)" "0 0"

finish
