# shellcheck shell=bash
# Lane "packages" (issue 31 part 1): the Debian packages
# postgresql-15-kizunasync and postgresql-17-kizunasync, built with
# PostgreSQL's Debian tooling (debian/, pg_buildext, dpkg-buildpackage) for
# 15 on this Debian 12 machine and for 17 in the Debian 13 root of the pg17
# lane, checked with lintian, installed with `apt install ./...deb` into a
# clean root of their major that has only the PostgreSQL server
# (scripts/cleanroot.sh, cached in /var/cache/kizunasync/clean-pg15 and
# clean-pg17), where CREATE EXTENSION, the update from the package's 0.1.0
# script and the regress and isolation suites run against the installed
# package (test/pkg/run.sh, build.sh, install.sh).
# Appends "packages <passed> <failed> <skipped>": one count per check, per
# regress script and per isolation spec.  Needs root (debootstrap, chroot,
# mounts in a private namespace): without it the lane says SKIPPED loudly
# and counts one skip.  Part of the default lanes unless KZ_PACKAGES=0; never
# inside the pg17 run's root.  The clean roots are made (or found) in the
# background from the start of the run (prepare_packages).
[ "${KZ_PACKAGES:-1}" = 0 ] || [ "${KZ_PG17_INNER:-0}" = 1 ] || KZ_EXTRA_LANES="$KZ_EXTRA_LANES packages"

prepare_packages() {
	[ "$(id -u)" = 0 ] || return 0
	KZ_PKG_ROOTS_LOG=$(mktemp /tmp/kizunasync-cleanroots.XXXXXX)
	{ bash "$ROOT/scripts/cleanroot.sh" build 15 && bash "$ROOT/scripts/cleanroot.sh" build 17; } \
		> "$KZ_PKG_ROOTS_LOG" 2>&1 &
	KZ_PKG_ROOTS_PID=$!
}

lane_packages() {
	echo "== lane: packages (postgresql-15/17-kizunasync: dpkg-buildpackage, lintian, apt install into a clean root, regress there)"
	if [ "$(id -u)" != 0 ]; then
		echo "!! SKIPPED lane packages: it needs root (debootstrap, chroot, mounts); nothing of the packages was tested"
		echo "packages 0 0 1" >> "$KZ_RESULTS"; return
	fi
	local rc=0 p f t0=$SECONDS log=$KZ_OUT/packages.log
	if [ -n "${KZ_PKG_ROOTS_PID:-}" ]; then
		wait "$KZ_PKG_ROOTS_PID" || true
		cat "$KZ_PKG_ROOTS_LOG"; rm -f "$KZ_PKG_ROOTS_LOG"
		echo "packages: waited $((SECONDS - t0)) s for the clean roots"
	fi
	bash "$ROOT/test/pkg/run.sh" > "$log" 2>&1 || rc=$?
	# the checks that failed, lintian's warnings, the Depends, the timings
	grep -v '^ok ' "$log" | grep -v '^1\.\.' || true
	p=$(grep -c '^ok ' "$log" || true)
	f=$(grep -c '^not ok ' "$log" || true)
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "!! packages: test/pkg/run.sh exited $rc"; fi
	echo "packages: $p ok, $f not ok in $((SECONDS - t0)) s (full output: $log; packages and logs: $KZ_OUT/pkg)"
	echo "packages $p $f 0" >> "$KZ_RESULTS"
}
