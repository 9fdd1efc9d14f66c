#!/usr/bin/env bash
# The Debian packages of kizunasync, built and tested for each major
# (issue 31; lane "packages", test/lanes/packages.sh):
#   - a copy of the checkout's source (the files git knows, committed or
#     not, nothing ignored: no build objects) in OUT/MAJOR/kizunasync-VERSION;
#   - test/pkg/build.sh there: dpkg-buildpackage, lintian, the package's
#     fields and files, the test-only extension.  15 on this Debian 12
#     machine; 17 inside the Debian 13 root of scripts/trixie.sh (in a
#     private mount namespace, OUT/17 bind-mounted at /kz/pkg: nothing of
#     the build stays in the root);
#   - test/pkg/install.sh: the package installed into a clean root of its
#     major (scripts/cleanroot.sh), CREATE EXTENSION, the update from 0.1.0,
#     the regress and isolation suites there.
# Every step prints TAP lines; logs, the .deb files and lintian's report stay
# in OUT/MAJOR.  Exit status 0 only when every step passed.  Needs root.
#
#   bash test/pkg/run.sh [MAJOR ...]        (default: 15 17; OUT = $KZ_OUT/pkg)
set -uo pipefail
CHECKOUT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${KZ_OUT:-$CHECKOUT/test/out}/pkg
VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$CHECKOUT/kizunasync.control")
MAJORS=${*:-15 17}
rc=0

copy_source() {  # copy_source DEST
	mkdir -p "$1"
	if git -C "$CHECKOUT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$CHECKOUT" && git ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
			tar --null -T - -cf -) | tar -C "$1" -xf -
	else
		tar -C "$CHECKOUT" --exclude=./test/out --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
			--exclude="./sql/kizunasync--$VERSION.sql" --exclude="./sql/kizunasync--*--$VERSION.sql" \
			-cf - . | tar -C "$1" -xf -
	fi
}

# the build runs where postgresql-common supports the major
host_supports() {
	[ -x /usr/share/postgresql-common/supported-versions ] &&
		/usr/share/postgresql-common/supported-versions 2>/dev/null | grep -qx "$1" &&
		[ -x "/usr/lib/postgresql/$1/bin/pg_config" ]
}

build_major() {  # build_major MAJOR: the source copy, the build and its checks
	local major=$1 D=$OUT/$1 t0=$SECONDS TR
	echo "# == PostgreSQL $major: build"
	if host_supports "$major"; then
		echo "# building on this machine ($(. /etc/os-release && echo "$PRETTY_NAME"))"
		bash "$D/kizunasync-$VERSION/test/pkg/build.sh" "$major" "$D" || return 1
	elif [ "$major" = 17 ]; then
		if ! TR=$(bash "$CHECKOUT/scripts/trixie.sh" build); then
			echo "not ok 1 - the Debian 13 root to build in (scripts/trixie.sh)"; return 1
		fi
		echo "# building in the Debian 13 root $TR"
		TR=$TR D=$D VERSION=$VERSION major=$major unshare --mount --propagation private bash -euo pipefail -c '
			mount -t proc proc "$TR/proc"
			mkdir -p "$TR/kz/pkg"; mount --bind "$D" "$TR/kz/pkg"
			exec chroot "$TR" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/kz/pkg \
				bash "/kz/pkg/kizunasync-$VERSION/test/pkg/build.sh" "$major" /kz/pkg' || return 1
	else
		echo "not ok 1 - a machine whose postgresql-common supports PostgreSQL $major"; return 1
	fi
	echo "# build and checks: $((SECONDS - t0)) s"
}

install_major() {  # install_major MAJOR: the clean-root install and tests
	local t0=$SECONDS r=0
	echo "# == PostgreSQL $1: install into a clean root"
	bash "$CHECKOUT/test/pkg/install.sh" "$1" "$OUT/$1" || r=1
	echo "# clean-root install and tests: $((SECONDS - t0)) s"
	return $r
}

# Each major's install test runs while the next major builds (the build is
# CPU, the suites mostly wait); outputs are printed in order afterwards.
prev="" pid=""
for major in $MAJORS; do
	rm -rf "${OUT:?}/$major"; mkdir -p "$OUT/$major"
	copy_source "$OUT/$major/kizunasync-$VERSION"
	[ -z "$pid" ] || wait "$pid" || true   # one build at a time
	build_major "$major" > "$OUT/$major/build.tap" 2>&1 &
	pid=$!
	[ -z "$prev" ] || install_major "$prev" > "$OUT/$prev/install.tap" 2>&1 || true
	prev=$major
done
[ -z "$pid" ] || wait "$pid" || true
[ -z "$prev" ] || install_major "$prev" > "$OUT/$prev/install.tap" 2>&1 || true
for major in $MAJORS; do
	cat "$OUT/$major/build.tap" "$OUT/$major/install.tap" 2>/dev/null
	grep -q '^not ok ' "$OUT/$major/build.tap" "$OUT/$major/install.tap" 2>/dev/null && rc=1
	# a step that ended without its plan line (crashed) fails too
	for f in build install; do
		grep -q '^1\.\.[0-9]' "$OUT/$major/$f.tap" 2>/dev/null || { echo "not ok - PostgreSQL $major: $f ended without results"; rc=1; }
	done
done
exit $rc
