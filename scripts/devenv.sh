#!/usr/bin/env bash
# Developer convenience: a private copy of the PostgreSQL 15 installation
# under /opt/pg-NAME (PostgreSQL's Debian build is relocatable), so several
# people can `make install` different builds on one machine without clobbering
# each other.  Prints the environment to use with scripts/test.sh:
#
#   eval "$(bash scripts/devenv.sh NAME PORT)"
#   KZ_SKIP_DEPS=1 bash scripts/test.sh
set -euo pipefail
NAME=${1:?name}; PORT=${2:?port}
P=/opt/pg-$NAME
if [ ! -x "$P/usr/lib/postgresql/15/bin/pg_config" ]; then
	mkdir -p "$P/usr/lib/postgresql" "$P/usr/share/postgresql" "$P/usr/include"
	cp -a /usr/lib/postgresql/15 "$P/usr/lib/postgresql/"
	cp -a /usr/share/postgresql/15 "$P/usr/share/postgresql/"
	cp -a /usr/include/postgresql "$P/usr/include/"
fi
echo "export PG_CONFIG=$P/usr/lib/postgresql/15/bin/pg_config KZ_PORT=$PORT KZ_RUNDIR=/tmp/kizunasync-$NAME PATH=$P/usr/lib/postgresql/15/bin:\$PATH"
echo "export PGHOST=/tmp/kizunasync-$NAME/sock PGPORT=$PORT PGUSER=postgres"
