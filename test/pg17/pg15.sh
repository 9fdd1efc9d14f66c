#!/usr/bin/env bash
# Makes the PostgreSQL 15 installation of the outer run (kizunasync
# installed by scripts/test.sh) usable inside the trixie root $1 for the
# pg_upgrade test (test/t/pg_upgrade.sh): test/pg17/run.sh bind-mounts the
# installation at /usr/lib/postgresql/15 and /usr/share/postgresql/15 in the
# root (in its private mount namespace), then runs this, which copies the
# few shared libraries its binaries need that Debian 13 does not have
# (Debian 12's ICU 72 and libldap-2.5: other sonames than 13's, so nothing
# of 13 is replaced) into ROOT/kz/pg15lib, for LD_LIBRARY_PATH.
# Prints why not and exits 1 when it cannot.
set -euo pipefail
TR=${1:?root}
lib=$TR/kz/pg15lib
mkdir -p "$lib"
for _ in 1 2 3 4 5; do
	missing=$(for b in bin/postgres bin/pg_ctl bin/initdb bin/pg_controldata bin/pg_resetwal lib/kizunasync.so; do
		LD_LIBRARY_PATH=/kz/pg15lib chroot "$TR" ldd "/usr/lib/postgresql/15/$b" 2>/dev/null || true
	done | awk '/not found/ {print $1}' | sort -u)
	[ -z "$missing" ] && exit 0
	for so in $missing; do
		src=$(ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ {print $NF; exit}')
		[ -n "$src" ] || { echo "pg15: $so (needed by PostgreSQL 15's binaries) is not on this machine"; exit 1; }
		cp -L "$src" "$lib/$so"
	done
done
echo "pg15: libraries still missing after copying: $missing"; exit 1
