#!/usr/bin/env bash
# Run the pg_regress suite (test/sql/*.sql) and the pgTAP files once against a postmaster running
# under valgrind memcheck (by hand, not in CI: it takes minutes).
#
#   eval "$(bash scripts/devenv.sh NAME PORT)"   # the install to test
#   bash test/valgrind/run.sh [VG_PORT]
#
# A throwaway cluster (data, socket and logs under /tmp/kizunasync-vg-PORT)
# is started by valgrind with --trace-children=yes, so every backend forked
# by the postmaster runs under memcheck.  The extension must be built and
# installed into $PG_CONFIG's prefix first (scripts/test.sh does that).
# Output: one vg-<pid>.log per process in the run directory, and a summary
# of every log that reports an error in or below kizunasync.so (any log with
# errors at all is listed too).  Exit status 1 when any process reported a
# memcheck error.
#
# Notes: Debian's postgres is not built with USE_VALGRIND, so palloc'd
# chunks are not individually tracked (an overrun inside a memory-context
# block is not seen); uninitialised reads, invalid reads/writes outside
# palloc blocks and malloc-level errors (jansson) are.  Suppressions:
# test/valgrind/pg-valgrind.supp (WAL padding written uninitialised on
# purpose).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
VG_PORT=${1:-55599}
export KZ_CORPUS=${KZ_CORPUS:-$ROOT/../shared/corpus}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
BIN=$("$PG_CONFIG" --bindir)
RUN=/tmp/kizunasync-vg-$VG_PORT
DATA=$RUN/data
SOCK=$RUN/sock

as_pg() { runuser -u postgres -- "$@"; }

rm -rf "$RUN"
install -d -o postgres -g postgres -m 755 "$RUN"
install -d -o postgres -g postgres -m 775 "$SOCK"
install -d -o postgres -g postgres -m 700 "$DATA"
install -o postgres -g postgres -m 644 test/valgrind/pg-valgrind.supp "$RUN/pg-valgrind.supp"
as_pg "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >/dev/null
cat >> "$DATA/postgresql.conf" <<CONF
listen_addresses = ''
port = $VG_PORT
unix_socket_directories = '$SOCK'
max_connections = 30
fsync = off
autovacuum = off
log_min_messages = warning
CONF

echo "valgrind: starting postmaster under memcheck on $SOCK port $VG_PORT"
as_pg valgrind --trace-children=yes --track-origins=yes --leak-check=no \
	--suppressions="$RUN/pg-valgrind.supp" \
	--log-file="$RUN/vg-%p.log" \
	"$BIN/postgres" -D "$DATA" >"$RUN/postmaster.log" 2>&1 &
for i in $(seq 1 240); do
	if psql -X -q -h "$SOCK" -p "$VG_PORT" -U postgres -d postgres -c 'SELECT 1' >/dev/null 2>&1; then break; fi
	sleep 1
done
export PGHOST=$SOCK PGPORT=$VG_PORT PGUSER=postgres
psql -X -q -d postgres -f test/setup/standins.sql >/dev/null

out=$RUN/regress-out
rc=0
time make -s PG_CONFIG="$PG_CONFIG" installcheck KZ_OUTDIR="$out" ISOLATION= >"$RUN/installcheck.log" 2>&1 || rc=$?
grep -E '\.\.\. |tests (passed|failed)' "$RUN/installcheck.log" || true

# the pgTAP files too (bad inputs, attacks: many error paths)
createdb kz_vg_tap
psql -X -q -d kz_vg_tap -f test/setup/standins.sql >/dev/null
psql -X -q -d kz_vg_tap -c 'CREATE EXTENSION pgtap; CREATE EXTENSION kizunasync;' >/dev/null
pg_prove -d kz_vg_tap test/pgtap/*.sql >"$RUN/pgtap.log" 2>&1 || rc=$?
tail -3 "$RUN/pgtap.log"

as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 300 stop >/dev/null || true
sleep 2

nlogs=$(ls "$RUN"/vg-*.log | wc -l)
nclean=$(grep -l 'ERROR SUMMARY: 0 errors' "$RUN"/vg-*.log | wc -l)
bad=0
for f in "$RUN"/vg-*.log; do
	if grep -q 'ERROR SUMMARY: [1-9]' "$f" || grep -q '^==[0-9]*== \(Invalid\|Conditional\|Use of uninit\|Syscall param\|Source and destination\|Mismatched\)' "$f"; then
		bad=$((bad + 1))
		echo "--- $f"
		grep -n 'kizunasync' "$f" | head -20 || true
		head -60 "$f"
	fi
done
echo "valgrind: $nlogs processes logged, $nclean with 'ERROR SUMMARY: 0 errors', $bad with memcheck errors; tests exit $rc"
[ "$bad" -eq 0 ] && [ "$rc" -eq 0 ]
