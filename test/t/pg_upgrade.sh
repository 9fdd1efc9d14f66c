#!/usr/bin/env bash
# pg_upgrade from PostgreSQL 15 to 17 with kizunasync installed in both
# (issue 22).  Runs inside the trixie root of the pg17 lane, where
# PostgreSQL 15 (the outer run's installation, kizunasync installed by
# scripts/test.sh) is at $KZ_PG15_BIN and 17 is Debian's (pg_config in
# $PG_CONFIG, kizunasync installed by the inner run):
#   1. a 15 cluster of its own; the history of test/t/history.sh in
#      kz_t_up (synced tables, devices' cursors, a reap, a journal);
#   2. pg_upgrade --copy into a new 17 cluster (--copy leaves the 15
#      cluster intact, so it can answer the same requests afterwards);
#   3. every bookkeeping row and sequence, the effective settings and the
#      application data of the upgraded database equal the original's;
#      then both get the same requests (continue_steps): pulls from every
#      recorded cursor, a new write delivered once, replays answered from
#      the ledger, a new journal entry (continue_checks).
# TAP output.  Fails (never skips) without PostgreSQL 15: KZ_PG15_WHY says why.
T_NAME=pg_upgrade
# shellcheck source=test/t/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=test/t/history.sh
. "$T_DIR/history.sh"
O=$T_OUT
OLD_BIN=${KZ_PG15_BIN:-}
NEW_BIN=$T_BIN
UP=${KZ_T_PGUP_DIR:-/tmp/kizunasync-pgupgrade}
OLD_PORT=${KZ_T_PGUP_PORT:-55441} NEW_PORT=$(( ${KZ_T_PGUP_PORT:-55441} + 1 ))
DB=kz_t_up NEWDB=kz_t_up_17
as_pg() { (cd "$UP" && runuser -u postgres -- env LD_LIBRARY_PATH="${KZ_PG15_LIBS:-}" "$@"); }

if [ -z "$OLD_BIN" ] || [ ! -x "$OLD_BIN/postgres" ]; then
	notok "PostgreSQL 15 is available in the root for pg_upgrade" "${KZ_PG15_WHY:-KZ_PG15_BIN is not set (run through the pg17 lane)}"
	finish; exit
fi
contents() { q "$1" -v schemas="$2" -f "$T_DIR/contents.sql"; }
effective_settings() { printf 'BEGIN;\nSELECT kizunasync.configure();\nROLLBACK;\n' | q "$1"; }
# q routes by database: the original on the 15 cluster, the upgrade on 17
eval "$(declare -f q | sed '1s/^q /any_q /')"
q() {
	if [ "$1" = "$NEWDB" ]; then PGHOST=$UP/sock PGPORT=$NEW_PORT any_q "$@"
	else PGHOST=$UP/sock PGPORT=$OLD_PORT any_q "$@"; fi
}
pg_start() { as_pg "$1/pg_ctl" -D "$UP/$2" -l "$UP/$2.log" -w -t 120 -o "-p $3 -k $UP/sock -c listen_addresses=''" start >/dev/null; }
pg_stop() { as_pg "$1/pg_ctl" -D "$UP/$2" -m fast -w stop >/dev/null 2>&1 || true; }
stop_all() { pg_stop "$NEW_BIN" new; pg_stop "$OLD_BIN" old; [ "${KZ_T_KEEP:-0}" = 1 ] || rm -rf "$UP"; }
trap stop_all EXIT

stop_all; mkdir -p "$UP/sock"; chown -R postgres: "$UP"
if ! as_pg "$OLD_BIN/initdb" -D "$UP/old" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 > "$O/initdb-15.log" 2>&1 ||
	! pg_start "$OLD_BIN" old "$OLD_PORT" > "$O/start-15.log" 2>&1; then
	notok "a PostgreSQL 15 cluster starts in the root" "$(tail -n 5 "$O/initdb-15.log" "$O/start-15.log" "$UP/old.log" 2>/dev/null)"
	finish; exit
fi
check "the original cluster runs PostgreSQL 15, the target's binaries are 17" \
	"$(q postgres -c "SELECT current_setting('server_version_num')::int / 10000") $("$NEW_BIN/postgres" -V | sed 's/.* \([0-9]*\)\..*/\1/')" "15 17"
createdb -h "$UP/sock" -p "$OLD_PORT" -T template0 $DB
q $DB -f "$T_ROOT/test/setup/standins.sql" >/dev/null
q $DB -c "SET client_min_messages = warning; CREATE EXTENSION kizunasync" >/dev/null
history_sql configure > "$O/history.sql"
if ! q $DB -f "$O/history.sql" > "$O/history.out" 2>&1; then
	notok "the history builds on 15" "$(tail -n 5 "$O/history.out")"
	finish; exit
fi
ok "the history builds on 15 ($(q $DB -c "SELECT count(*) FROM kzt.calls") requests)"
contents $DB kizunasync > "$O/old.bookkeeping"
contents $DB public,storage,auth,kzt > "$O/old.appdata"
effective_settings $DB > "$O/old.settings"
pg_stop "$OLD_BIN" old

# the new cluster: the Supabase stand-in roles are cluster-wide objects
# that pg_upgrade carries over; the new cluster must be empty
as_pg "$NEW_BIN/initdb" -D "$UP/new" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 > "$O/initdb-17.log" 2>&1
rc=0
as_pg "$NEW_BIN/pg_upgrade" --copy -b "$OLD_BIN" -B "$NEW_BIN" -d "$UP/old" -D "$UP/new" \
	-p $((OLD_PORT + 2)) -P $((NEW_PORT + 2)) -s "$UP/sock" > "$O/pg_upgrade.log" 2>&1 || rc=$?
if [ $rc -eq 0 ]; then
	ok "pg_upgrade --copy from 15 to 17 with kizunasync installed succeeds"
else
	notok "pg_upgrade --copy from 15 to 17 with kizunasync installed succeeds" \
		"exit $rc: $(grep -v '^ *$' "$O/pg_upgrade.log" | tail -n 12)" \
		"$(cat "$UP"/new/pg_upgrade_output.d/*/loadable_libraries.txt 2>/dev/null | head -n 5)"
	finish; exit
fi
pg_start "$NEW_BIN" new "$NEW_PORT" && pg_start "$OLD_BIN" old "$OLD_PORT" ||
	{ notok "both clusters start after the upgrade" "$(tail -n 5 "$UP/new.log" "$UP/old.log")"; finish; exit; }
psql -X -q -h "$UP/sock" -p "$NEW_PORT" -d postgres -c "ALTER DATABASE $DB RENAME TO $NEWDB" >/dev/null
check "the upgraded database runs on 17 with the extension's version unchanged" \
	"$(q $NEWDB -c "SELECT current_setting('server_version_num')::int / 10000 || ' ' || extversion FROM pg_extension WHERE extname = 'kizunasync'")" \
	"17 $(q $DB -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'")"
contents $NEWDB kizunasync > "$O/new.bookkeeping" 2> "$O/new.bookkeeping.err"
check_same "every bookkeeping row and sequence equals the original's" "$O/old.bookkeeping" "$O/new.bookkeeping"
contents $NEWDB public,storage,auth,kzt > "$O/new.appdata" 2> "$O/new.appdata.err"
check_same "application, Storage and auth data equal the original's" "$O/old.appdata" "$O/new.appdata"
effective_settings $NEWDB > "$O/new.settings" 2> "$O/new.settings.err"
check_same "effective settings equal the original's" "$O/old.settings" "$O/new.settings"
continue_steps $DB
check "original: A2 (below the reap horizon) is told CHECKPOINT_EXPIRED" "$(expired_count "$O/$DB.pulls1")" 1
continue_steps $NEWDB
continue_checks "pg_upgrade" $DB "the original on 15" $NEWDB
finish
