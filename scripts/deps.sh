#!/usr/bin/env bash
# Installs every Debian package the build, the tests, the demo and the
# benchmarks need.  Idempotent; needs root (CI and developers are root here).
set -euo pipefail
PKGS=(
	postgresql-15 postgresql-client-15 postgresql-server-dev-15
	libjansson-dev pkg-config make gcc
	postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl
	postgresql-15-cron
	python3 jq
	valgrind	# bench/write_profile: instructions per commit (callgrind)
	clang libclang-rt-14-dev
	debootstrap	# the pg17 lane's Debian 13 root (scripts/trixie.sh)
	# the packages lane (test/lanes/packages.sh): PostgreSQL's Debian
	# tooling (pg_buildext, dh --with pgxs_loop), dpkg-buildpackage, lintian
	postgresql-server-dev-all debhelper dpkg-dev build-essential lintian
	# the monitoring lane (test/lanes/monitoring.sh): the exporter it
	# scrapes and promtool (from prometheus) for the alerting rules
	prometheus-postgres-exporter prometheus
)
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	apt-get update -qq
	# Installing the server headers may upgrade the server: keep both in step.
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" postgresql-15 >/dev/null
fi
echo "deps: ok ($(/usr/lib/postgresql/15/bin/postgres --version))"
