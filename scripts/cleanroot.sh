#!/usr/bin/env bash
# A clean Debian root with nothing but the PostgreSQL server of one major,
# for the packages lane (test/lanes/packages.sh, issue 31): Debian 12 with
# postgresql-15, Debian 13 with postgresql-17.  Made with debootstrap
# --variant=minbase from the Debian mirror this machine's apt uses, then
# `apt-get install postgresql-NN` from the suite, its -updates and its
# -security archive (as on a server that takes security updates: a package
# built here depends on the server's current minor version).  Nothing of a
# build ever enters it: the lane installs the package into a throwaway
# overlay over it.  Built once and reused; rebuilt when its marker (the
# suite and package list) differs.
#
#   scripts/cleanroot.sh build MAJOR     make (or reuse) the root, print its path
#   scripts/cleanroot.sh path MAJOR      print its path
#
# Environment: KZ_CLEANROOT_DIR (default /var/cache/kizunasync), KZ_DEBIAN_MIRROR,
# KZ_DEBIAN_SECURITY_MIRROR (default: the URIs apt uses here, else deb.debian.org).
set -euo pipefail
MAJOR=${2:?usage: $0 build|path MAJOR}
case $MAJOR in
	15) SUITE=bookworm ;;
	17) SUITE=trixie ;;
	*) echo "cleanroot: no Debian suite known for PostgreSQL $MAJOR" >&2; exit 2 ;;
esac
ROOT=${KZ_CLEANROOT_DIR:-/var/cache/kizunasync}/clean-pg$MAJOR
PKGS="postgresql-$MAJOR"
MARK=$ROOT/.kizunasync-root

# the first URI of apt's sources here ending in /$1 (debian, debian-security)
apt_uri() {
	grep -hE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
		grep -oE "https?://[^ ]+/$1/?( |\$)" | head -1 | tr -d ' ' || true
}

build() {
	if [ -f "$MARK" ] && [ "$(cat "$MARK")" = "$SUITE $PKGS" ]; then echo "$ROOT"; return; fi
	command -v debootstrap >/dev/null || {
		echo "cleanroot: installing debootstrap" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
	}
	local m s t0=$SECONDS log=$ROOT.log
	m=${KZ_DEBIAN_MIRROR:-$(apt_uri debian)}; m=${m:-http://deb.debian.org/debian}
	s=${KZ_DEBIAN_SECURITY_MIRROR:-$(apt_uri debian-security)}; s=${s:-http://deb.debian.org/debian-security}
	echo "cleanroot: debootstrap $SUITE into $ROOT from $m, then $PKGS" >&2
	rm -rf "$ROOT.new"; mkdir -p "$ROOT.new/etc/postgresql-common/createcluster.d"
	# the postgresql-common postinst would create a 'main' cluster: don't
	echo "create_main_cluster = false" > "$ROOT.new/etc/postgresql-common/createcluster.d/kizunasync.conf"
	if ! debootstrap --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
		"$SUITE" "$ROOT.new" "$m" > "$log" 2>&1; then
		tail -30 "$log" >&2; echo "cleanroot: debootstrap FAILED (log: $log)" >&2; exit 1
	fi
	cat > "$ROOT.new/etc/apt/sources.list" <<-SRC
	deb $m $SUITE main
	deb $m $SUITE-updates main
	deb $s $SUITE-security main
	SRC
	if ! unshare --mount --propagation private bash -c '
		mount -t proc proc "$1/proc"
		chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
			bash -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $2 && apt-get clean"' \
		_ "$ROOT.new" "$PKGS" >> "$log" 2>&1; then
		tail -30 "$log" >&2; echo "cleanroot: apt-get install $PKGS FAILED (log: $log)" >&2; exit 1
	fi
	rm -rf "$ROOT"; mv "$ROOT.new" "$ROOT"
	echo "$SUITE $PKGS" > "$MARK"
	echo "cleanroot: $ROOT ready in $((SECONDS - t0)) s ($(chroot "$ROOT" dpkg-query -W "$PKGS" | tr '\t' ' '))" >&2
	echo "$ROOT"
}

case "${1:-}" in
	build)
		mkdir -p "$(dirname "$ROOT")"
		exec 9> "$ROOT.lock"
		flock 9
		build ;;
	path) echo "$ROOT" ;;
	*) echo "usage: $0 build|path MAJOR" >&2; exit 2 ;;
esac
