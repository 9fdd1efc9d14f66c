#!/usr/bin/env bash
# A streaming hot standby of the private test cluster (scripts/cluster.sh),
# for the replica lane and bench/pull_standby (issue 15):
#
#   test/replica/standby.sh start|stop|env
#
# start: a fresh base backup of the running primary (pg_basebackup -R, with a
# physical replication slot so the primary keeps the WAL the standby still
# needs) into $KZ_RUNDIR/standby, started on port $KZ_STANDBY_PORT (default
# KZ_PORT + 1) with the primary's socket directory; waits until it accepts
# connections.  stop: stops it, drops its slot and its data directory.
# The primary needs nothing beyond initdb's defaults: wal_level replica (or
# logical), max_wal_senders 10, and pg_hba's "local replication all trust".
set -euo pipefail
KZ_PORT=${KZ_PORT:-55432}
KZ_RUNDIR=${KZ_RUNDIR:-/tmp/kizunasync-$KZ_PORT}
KZ_STANDBY_PORT=${KZ_STANDBY_PORT:-$((KZ_PORT + 1))}
if [ -z "${PG_BINDIR:-}" ]; then
	if [ -n "${PG_CONFIG:-}" ]; then PG_BINDIR=$("$PG_CONFIG" --bindir); else PG_BINDIR=/usr/lib/postgresql/15/bin; fi
fi
SOCK=$KZ_RUNDIR/sock
DATA=$KZ_RUNDIR/standby
LOG=$KZ_RUNDIR/standby.log
SLOT=kz_standby
as_pg() { (cd / && runuser -u postgres -- "$@"); }
primary() { as_pg "$PG_BINDIR/psql" -X -q -At -h "$SOCK" -p "$KZ_PORT" -d postgres "$@"; }

stop() {
	if [ -s "$DATA/PG_VERSION" ] && as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
		as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
	fi
	rm -rf "$DATA"
	primary -c "SELECT pg_drop_replication_slot('$SLOT') FROM pg_replication_slots WHERE slot_name = '$SLOT'" \
		>/dev/null 2>&1 || true
}

start() {
	stop
	as_pg "$PG_BINDIR/pg_basebackup" -h "$SOCK" -p "$KZ_PORT" -U postgres -D "$DATA" \
		-R -X stream -C -S "$SLOT" -c fast --no-sync >/dev/null
	# port and socket of its own; no preloaded libraries (pg_cron serves the
	# primary only); feedback so that the primary's vacuum does not cancel
	# pulls on the standby
	# test/replica/window.py stops replay at chosen WAL positions through
	# this file (recovery_target_lsn needs a restart)
	echo "include_if_exists = 'kz_target.conf'" >> "$DATA/postgresql.conf"
	cat >> "$DATA/postgresql.auto.conf" <<CONF
port = $KZ_STANDBY_PORT
unix_socket_directories = '$SOCK'
shared_preload_libraries = ''
hot_standby = on
hot_standby_feedback = on
CONF
	as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -l "$LOG" -w -t 120 start >/dev/null
	for _ in $(seq 1 600); do
		if as_pg "$PG_BINDIR/psql" -X -q -At -h "$SOCK" -p "$KZ_STANDBY_PORT" -d postgres \
			-c 'SELECT pg_is_in_recovery()' 2>/dev/null | grep -qx t; then
			echo "standby: streaming on $SOCK port $KZ_STANDBY_PORT"
			return 0
		fi
		sleep 0.1
	done
	echo "standby: did not accept connections (see $LOG)" >&2
	return 1
}

case "${1:-}" in
	start) start ;;
	stop) stop; echo "standby: stopped" ;;
	env) echo "export KZ_STANDBY_HOST=$SOCK KZ_STANDBY_PORT=$KZ_STANDBY_PORT" ;;
	*) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
