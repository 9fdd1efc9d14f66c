#!/usr/bin/env bash
# Fresh machine to a running demo: installs packages, builds and installs the
# extension, starts a local cluster (as the postgres OS user, socket under
# /tmp), creates database kz_demo with the Supabase stand-ins and a synced
# `todos` table, then plays two API requests exactly as the Data API would
# (one transaction each, SET LOCAL ROLE authenticated, JWT claims): a push
# that inserts a todo and a pull that bootstraps it back.  The cluster keeps
# running afterwards; the last lines say how to connect and how to stop it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export KZ_PORT=${KZ_PORT:-55433}
export KZ_RUNDIR=${KZ_RUNDIR:-/tmp/kizunasync-demo}
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
[ "${KZ_SKIP_DEPS:-0}" = 1 ] || bash scripts/deps.sh
export PATH=$("$PG_CONFIG" --bindir):$PATH
make -s PG_CONFIG="$PG_CONFIG" >/dev/null
make -s PG_CONFIG="$PG_CONFIG" install >/dev/null
bash scripts/cluster.sh start
eval "$(bash scripts/cluster.sh env)"
export PGHOST PGPORT PGUSER
dropdb --if-exists kz_demo
createdb kz_demo
psql -X -q -v ON_ERROR_STOP=1 -d kz_demo -f test/setup/standins.sql >/dev/null
psql -X -v ON_ERROR_STOP=1 -d kz_demo -f scripts/demo.sql
echo
echo "demo database is running: psql -h $PGHOST -p $PGPORT -U postgres kz_demo"
echo "stop it with: KZ_PORT=$KZ_PORT KZ_RUNDIR=$KZ_RUNDIR bash scripts/cluster.sh stop"
