#!/usr/bin/env bash
# Runs lanes of scripts/test.sh against PostgreSQL 17, Debian's own build,
# inside a Debian 13 (trixie) root made by scripts/trixie.sh (issue 22).
#
#   bash test/pg17/run.sh            (from the checkout, as root)
#
# In a private mount namespace (nothing stays mounted afterwards): /proc and
# a tmpfs /dev/shm in the root, this checkout bind-mounted read-only at
# /kz/src, the corpus at /kz/corpus and the 15 cluster's socket directory
# (PGHOST, when set) at /kz/pg15sock; then, inside the root, the checkout is
# copied to /kz/build (the 15 build's objects stay out of it), built with
# PostgreSQL 17's pg_config and scripts/test.sh runs there with
# KZ_LANES=$KZ_PG17_LANES on a cluster of its own (port $KZ_PG17_PORT).
# With the 15 cluster's socket at hand, test/t/cross_major.sh then restores
# a database dumped from PostgreSQL 15 into 17 (and pg_upgrades one when
# test/pg17/pg15.sh could bring PostgreSQL 15 into the root).
# The inner run's lanes.txt is copied to $KZ_OUT/pg17/lanes.txt.
# Exit status 0 only when every inner lane ran and passed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KZ_OUT=${KZ_OUT:-$ROOT/test/out}
OUT=$KZ_OUT/pg17
LANES=${KZ_PG17_LANES:-regress pgtap vectors replay roles ops cross}
PORT=${KZ_PG17_PORT:-55417}
CORPUS=$(cd "${KZ_CORPUS:-$ROOT/../shared/corpus}" 2>/dev/null && pwd) || CORPUS=""
inner() {
	# runs inside the root
	export PATH=/usr/lib/postgresql/17/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 LC_ALL=C.UTF-8 HOME=/root
	rm -rf /kz/build; mkdir -p /kz/build
	tar -C /kz/src --exclude=./test/out --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		$(sed -n "s/^\(sql\/kizunasync--.*\)$/--exclude=\1/p" /kz/src/.gitignore) -cf - . | tar -C /kz/build -xf -
	rm -rf "/tmp/kizunasync-$PORT"
	cd /kz/build
	local rc=0
	KZ_SKIP_DEPS=1 KZ_PG17_INNER=1 PG_CONFIG=/usr/lib/postgresql/17/bin/pg_config \
		KZ_CORPUS=/kz/corpus KZ_PORT=$PORT KZ_RUNDIR=/tmp/kizunasync-$PORT \
		KZ_LANES="$LANES" bash scripts/test.sh || rc=$?
	return $rc
}

if [ "${1:-}" = --inner ]; then inner; exit; fi

mkdir -p "$OUT"

if [ "$(id -u)" != 0 ]; then echo "pg17: needs root (debootstrap, chroot, mounts)"; exit 1; fi
TR=$(bash "$ROOT/scripts/trixie.sh" build) || { echo "pg17: the trixie root could not be made"; exit 1; }


# PostgreSQL 15 for the pg_upgrade test: the outer run's installation
PG15_CONFIG=${KZ_PG15_CONFIG:-${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}}
PG15_LIB="" PG15_SHARE=""
if "$PG15_CONFIG" --version 2>/dev/null | grep -q '^PostgreSQL 15\.'; then
	PG15_LIB=$(dirname "$("$PG15_CONFIG" --bindir)"); PG15_SHARE=$("$PG15_CONFIG" --sharedir)
fi

# the repository's object store, for test/t/upgrade.sh (it builds each
# release from its commit): a worktree's lives outside the checkout, and is
# bind-mounted at the same path in the root
GIT_COMMON=$(git -C "$ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
case $GIT_COMMON in "$ROOT"/*) GIT_COMMON="" ;; esac

# host side: the mounts live in a private mount namespace of this command
export ROOT TR CORPUS PORT LANES PG15_CONFIG PG15_LIB PG15_SHARE GIT_COMMON
rc=0
unshare --mount --propagation private bash -euo pipefail -c '
	mount -t proc proc "$TR/proc"
	mount -t tmpfs -o size=512m,mode=1777 shm "$TR/dev/shm"
	mkdir -p "$TR/kz/src" "$TR/kz/corpus" "$TR/kz/pg15sock"
	mount --bind "$ROOT" "$TR/kz/src"; mount -o remount,bind,ro "$TR/kz/src"
	if [ -n "$CORPUS" ]; then mount --bind "$CORPUS" "$TR/kz/corpus"; mount -o remount,bind,ro "$TR/kz/corpus"; fi
	if [ -n "${PGHOST:-}" ] && [ -d "$PGHOST" ]; then mount --bind "$PGHOST" "$TR/kz/pg15sock"; fi
	if [ -n "$GIT_COMMON" ]; then
		mkdir -p "$TR$GIT_COMMON"; mount --bind "$GIT_COMMON" "$TR$GIT_COMMON"; mount -o remount,bind,ro "$TR$GIT_COMMON"
	fi
	pg15_bin="" pg15_why="no PostgreSQL 15 installation ($PG15_CONFIG is not pg_config of 15)"
	if [ -n "$PG15_LIB" ]; then
		mkdir -p "$TR/usr/lib/postgresql/15" "$TR/usr/share/postgresql/15"
		mount --bind "$PG15_LIB" "$TR/usr/lib/postgresql/15"; mount -o remount,bind,ro "$TR/usr/lib/postgresql/15"
		mount --bind "$PG15_SHARE" "$TR/usr/share/postgresql/15"; mount -o remount,bind,ro "$TR/usr/share/postgresql/15"
		if pg15_why=$(bash "$ROOT/test/pg17/pg15.sh" "$TR" 2>&1); then pg15_bin=/usr/lib/postgresql/15/bin; fi
	fi
	exec chroot "$TR" /usr/bin/env -i KZ_PG15_PGPORT="${PGPORT:-}" KZ_PG15_PGHOST="${PGHOST:+/kz/pg15sock}" \
		KZ_PG15_BIN="$pg15_bin" KZ_PG15_WHY="$pg15_why" KZ_PG15_LIBS=/kz/pg15lib \
		KZ_PG17_PORT="$PORT" KZ_PG17_LANES="$LANES" KZ_STRESS_SECONDS="${KZ_STRESS_SECONDS:-}" \
		/bin/bash /kz/src/test/pg17/run.sh --inner
' 2>&1 | tee "$OUT/run.log" || rc=$?
cp "$TR/kz/build/test/out/lanes.txt" "$OUT/lanes.txt" 2>/dev/null || : > "$OUT/lanes.txt"
cp "$TR/kz/build/test/out/lane-times.txt" "$OUT/lane-times.txt" 2>/dev/null || true
exit $rc
