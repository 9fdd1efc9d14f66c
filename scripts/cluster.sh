#!/usr/bin/env bash
# A private PostgreSQL 15 cluster for tests and the demo, run as the postgres
# OS user (PostgreSQL refuses to run as root) on a unix socket under /tmp.
#
#   scripts/cluster.sh start|stop|restart|status|env
#
# The configuration is written when the data directory is created (settings
# added later are appended to an existing one, and take effect at its next
# start: `scripts/cluster.sh restart`).
#
# Environment: KZ_PORT (default 55432), KZ_RUNDIR (default /tmp/kizunasync-$KZ_PORT),
# PG_BINDIR (default: bindir of $PG_CONFIG, or /usr/lib/postgresql/15/bin).
set -euo pipefail
KZ_PORT=${KZ_PORT:-55432}
KZ_RUNDIR=${KZ_RUNDIR:-/tmp/kizunasync-$KZ_PORT}
if [ -z "${PG_BINDIR:-}" ]; then
	if [ -n "${PG_CONFIG:-}" ]; then PG_BINDIR=$("$PG_CONFIG" --bindir); else PG_BINDIR=/usr/lib/postgresql/15/bin; fi
fi
DATA=$KZ_RUNDIR/data
SOCK=$KZ_RUNDIR/sock
LOG=$KZ_RUNDIR/postgres.log
as_pg() { (cd / && runuser -u postgres -- "$@"); }

start() {
	install -d -o postgres -g postgres -m 755 "$KZ_RUNDIR"
	install -d -o postgres -g postgres -m 775 "$SOCK"
	if [ ! -s "$DATA/PG_VERSION" ]; then
		install -d -o postgres -g postgres -m 700 "$DATA"
		as_pg "$PG_BINDIR/initdb" -D "$DATA" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >/dev/null
		cat >> "$DATA/postgresql.conf" <<CONF
listen_addresses = ''
port = $KZ_PORT
unix_socket_directories = '$SOCK'
max_connections = 120
max_prepared_transactions = 10
shared_buffers = 256MB
fsync = ${KZ_FSYNC:-on}
log_min_messages = warning
log_line_prefix = '%m [%p] %d '
CONF
		# pg_cron (optional): the retention schedule test runs in database kz_cron
		if [ -f "$("$PG_BINDIR/pg_config" --pkglibdir)/pg_cron.so" ]; then
			cat >> "$DATA/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_cron'
cron.database_name = 'kz_cron'
CONF
		fi
	fi
	# logical replication between two databases of this cluster
	# (test/t/replica_writes.sh); added to clusters made before it, too
	if ! grep -q '^wal_level = logical' "$DATA/postgresql.conf"; then
		cat >> "$DATA/postgresql.conf" <<CONF
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
CONF
	fi
	if as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
		echo "cluster: already running on $SOCK port $KZ_PORT"
	else
		as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null
		echo "cluster: started on $SOCK port $KZ_PORT"
	fi
}
stop() {
	if [ -s "$DATA/PG_VERSION" ] && as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
		as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
		echo "cluster: stopped"
	fi
}
case "${1:-}" in
	start) start ;;
	stop) stop ;;
	restart) stop; start ;;
	status) as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" status ;;
	env) echo "export PGHOST=$SOCK PGPORT=$KZ_PORT PGUSER=postgres" ;;
	*) echo "usage: $0 start|stop|restart|status|env" >&2; exit 2 ;;
esac
