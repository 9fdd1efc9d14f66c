#!/usr/bin/env bash
# A Debian 13 (trixie) root with PostgreSQL 17 and the test dependencies,
# made with debootstrap from the Debian package source this machine's apt
# already uses (read from /etc/apt/sources.list*), for the pg17 lane
# (test/lanes/pg17.sh) and the packages lane's build of
# postgresql-17-kizunasync (test/pkg/run.sh).  Built once and reused: a root
# is complete when its marker file lists the packages below; a complete root
# whose list lacks some of them gets them with apt-get inside it; anything
# else is rebuilt.
#
#   scripts/trixie.sh build       make (or reuse) the root, print its path
#   scripts/trixie.sh path        print the root's path
#
# Environment: KZ_TRIXIE_ROOT (default /var/cache/kizunasync/trixie),
# KZ_DEBIAN_MIRROR (default: the first Debian URI apt uses here).
set -euo pipefail
ROOT=${KZ_TRIXIE_ROOT:-/var/cache/kizunasync/trixie}
# (from build-essential on: the packages lane builds postgresql-17-kizunasync
# here with dpkg-buildpackage and pg_buildext, and runs lintian on it;
# perl-openssl-defaults provides the virtual perl-openssl-abi-3 that one of
# lintian's dependencies needs and debootstrap cannot resolve by itself)
PKGS="postgresql-17,postgresql-client-17,postgresql-server-dev-17,libjansson-dev,pkg-config,make,gcc,libc6-dev,postgresql-17-pgtap,libtap-parser-sourcehandler-pgtap-perl,postgresql-17-cron,python3,jq,util-linux,git,ca-certificates,build-essential,postgresql-server-dev-all,debhelper,dpkg-dev,lintian,perl-openssl-defaults"
MARK=$ROOT/.kizunasync-root

mirror() {
	if [ -n "${KZ_DEBIAN_MIRROR:-}" ]; then echo "$KZ_DEBIAN_MIRROR"; return; fi
	local m
	m=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
		grep -oE 'https?://[^ ]+/debian/?$|https?://[^ ]+/debian ' | head -1 | tr -d ' ')
	[ -n "$m" ] || { echo "trixie: no Debian package source found in /etc/apt/sources.list*; set KZ_DEBIAN_MIRROR" >&2; exit 1; }
	echo "$m"
}

build() {
	if [ -f "$MARK" ] && [ "$(cat "$MARK")" = "$PKGS" ]; then echo "$ROOT"; return; fi
	if [ -f "$MARK" ] && add_missing; then echo "$ROOT"; return; fi
	command -v debootstrap >/dev/null || {
		echo "trixie: installing debootstrap" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
	}
	local m keyring=/usr/share/keyrings/debian-archive-keyring.gpg t0=$SECONDS
	m=$(mirror)
	echo "trixie: debootstrap into $ROOT from $m (packages: $PKGS)" >&2
	umount_all
	rm -rf "$ROOT.new"; mkdir -p "$(dirname "$ROOT")"
	# the postgresql-common postinst would create a 'main' cluster: don't
	mkdir -p "$ROOT.new/etc/postgresql-common/createcluster.d"
	echo "create_main_cluster = false" > "$ROOT.new/etc/postgresql-common/createcluster.d/kizunasync.conf"
	if ! debootstrap --variant=minbase --keyring="$keyring" --include="$PKGS" \
		trixie "$ROOT.new" "$m" > "$(dirname "$ROOT")/debootstrap.log" 2>&1; then
		tail -30 "$(dirname "$ROOT")/debootstrap.log" >&2
		echo "trixie: debootstrap FAILED (log: $(dirname "$ROOT")/debootstrap.log)" >&2
		exit 1
	fi
	rm -rf "$ROOT"; mv "$ROOT.new" "$ROOT"
	echo "$PKGS" > "$MARK"
	echo "trixie: root ready in $((SECONDS - t0)) s ($(chroot "$ROOT" /usr/lib/postgresql/17/bin/postgres --version))" >&2
	echo "$ROOT"
}

# install the packages of $PKGS the root lacks (its apt sources are the
# ones debootstrap wrote); 1 when that fails
add_missing() {
	local t0=$SECONDS
	echo "trixie: adding packages to $ROOT" >&2
	if unshare --mount --propagation private bash -c '
		mount -t proc proc "$1/proc"
		chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
			bash -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $2"' _ "$ROOT" "${PKGS//,/ }" \
		> "$(dirname "$ROOT")/apt.log" 2>&1; then
		echo "$PKGS" > "$MARK"
		echo "trixie: packages added in $((SECONDS - t0)) s" >&2
		return 0
	fi
	tail -n 5 "$(dirname "$ROOT")/apt.log" >&2
	echo "trixie: adding packages failed: rebuilding the root" >&2
	return 1
}

umount_all() {
	local d
	for d in "$ROOT.new" "$ROOT"; do
		[ -d "$d" ] || continue
		awk -v r="$d/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | while read -r mp; do umount -l "$mp"; done
	done
}

case "${1:-}" in
	build)
		# one builder at a time (two test runs, or the pg17 lane's early start)
		mkdir -p "$(dirname "$ROOT")"
		exec 9> "$ROOT.lock"
		flock 9
		build ;;
	path) echo "$ROOT" ;;
	*) echo "usage: $0 build|path" >&2; exit 2 ;;
esac
