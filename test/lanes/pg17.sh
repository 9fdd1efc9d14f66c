# shellcheck shell=bash
# Lane "pg17" (issue 22): the lanes of $KZ_PG17_LANES (default regress
# pgtap vectors replay roles ops cross) against PostgreSQL 17, Debian's own
# build, in a Debian 13 root made with debootstrap (scripts/trixie.sh,
# cached in /var/cache/kizunasync/trixie; test/pg17/run.sh).  Appends
# "pg17 <passed> <failed> <skipped>": the sums of the inner run's lanes
# (skips as on 15: the corpus cases the harness does not run), plus one
# failure for every lane asked for that did not run or passed nothing on
# 17, and one when the root cannot be made or the inner run ends without
# results: the 17 lane never skips silently.
# Part of the default lanes unless KZ_PG17=0.  The root is made (or found)
# in the background from the start of the run (prepare_pg17), beside the
# build and the 15 lanes; the lane waits for it.
[ "${KZ_PG17:-1}" = 0 ] || [ "${KZ_PG17_INNER:-0}" = 1 ] || KZ_EXTRA_LANES="$KZ_EXTRA_LANES pg17"

prepare_pg17() {
	[ "$(id -u)" = 0 ] || return 0
	KZ_PG17_ROOT_LOG=$(mktemp /tmp/kizunasync-trixie.XXXXXX)
	bash "$ROOT/scripts/trixie.sh" build > "$KZ_PG17_ROOT_LOG" 2>&1 &
	KZ_PG17_ROOT_PID=$!
}

lane_pg17() {
	echo "== lane: pg17 (PostgreSQL 17 in a Debian 13 root: ${KZ_PG17_LANES:-regress pgtap vectors replay roles ops cross})"
	if [ "${KZ_PG17_INNER:-0}" = 1 ]; then
		echo "!! pg17: already inside the PostgreSQL 17 root"; echo "pg17 0 1 0" >> "$KZ_RESULTS"; return
	fi
	local rc=0 p f s t0=$SECONDS
	if [ -n "${KZ_PG17_ROOT_PID:-}" ]; then
		# the root started by prepare_pg17 (run.sh finds it made, or says why not)
		wait "$KZ_PG17_ROOT_PID" || true
		cat "$KZ_PG17_ROOT_LOG"; rm -f "$KZ_PG17_ROOT_LOG"
		echo "pg17: waited $((SECONDS - t0)) s for the root"
	fi
	bash "$ROOT/test/pg17/run.sh" > "$KZ_OUT/pg17.log" 2>&1 || rc=$?
	# the inner run's lane lines, its failures' details and its summary
	grep -E '^(== |!! |not ok|pg_prove|ops/|replay|roles|.* (passed|failed)|trixie:|pg17:)' "$KZ_OUT/pg17.log" | tail -n 150 || true
	if [ ! -s "$KZ_OUT/pg17/lanes.txt" ]; then
		echo "!! pg17: FAILED: the PostgreSQL 17 run ended without results (exit $rc); last lines of $KZ_OUT/pg17.log:"
		tail -n 30 "$KZ_OUT/pg17.log"
		echo "pg17 0 1 0" >> "$KZ_RESULTS"; return
	fi
	echo "-- pg17 lanes (PostgreSQL 17):"; sed 's/^/   17: /' "$KZ_OUT/pg17/lanes.txt"
	read -r p f s < <(awk '{p+=$2; f+=$3; s+=$4} END {print p+0, f+0, s+0}' "$KZ_OUT/pg17/lanes.txt")
	# every lane asked for ran and passed something: a lane that could not
	# run on 17 (no corpus, no pg_cron, no 15 to dump from) fails here
	local l missing=0
	for l in ${KZ_PG17_LANES:-regress pgtap vectors replay roles ops cross}; do
		case $l in regress) set -- regress isolation ;; pgtap) set -- pgtap pgtap-cron ;; *) set -- "$l" ;; esac
		for l in "$@"; do
			if ! awk -v l="$l" '$1 == l && $2 > 0 {found = 1} END {exit !found}' "$KZ_OUT/pg17/lanes.txt"; then
				echo "!! pg17: FAILED: lane $l did not run (or passed nothing) on PostgreSQL 17"; missing=$((missing + 1))
			fi
		done
	done
	f=$((f + missing))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "!! pg17: the run exited $rc"; fi
	echo "pg17: $p passed, $f failed, $s skipped on PostgreSQL 17 in $((SECONDS - t0)) s"
	echo "pg17 $p $f $s" >> "$KZ_RESULTS"
}

# Lane "cross", run inside the 17 root by the pg17 lane (not on its own
# elsewhere): PostgreSQL 15 to 17.
#   * test/t/dump_restore.sh with its originals built on the 15 cluster of
#     the outer run (KZ_PG15_PGHOST, KZ_PG15_PGPORT: its socket directory
#     bind-mounted into the root), dumped with 17's pg_dump and restored
#     into the 17 cluster in every form;
#   * test/t/pg_upgrade.sh: pg_upgrade --copy of a 15 cluster with the
#     history into 17 (the outer run's 15 installation in the root:
#     test/pg17/pg15.sh).
# Without 15 it fails: it never skips.
lane_cross() {
	echo "== lane: cross (PostgreSQL 15 to 17: dump/restore, pg_upgrade)"
	local t log rc p f k pass=0 fail=0 skipped=0
	for t in cross_major pg_upgrade; do
		log=$KZ_OUT/t-$t.log; rc=0
		if [ $t = cross_major ]; then
			if [ -z "${KZ_PG15_PGHOST:-}" ] || [ -z "${KZ_PG15_PGPORT:-}" ]; then
				echo "not ok 1 - a PostgreSQL 15 cluster to dump from (KZ_PG15_PGHOST/KZ_PG15_PGPORT unset: run through the pg17 lane of scripts/test.sh)" > "$log"
			else
				T_NAME=cross_major KZ_T_SRC_PGHOST=$KZ_PG15_PGHOST KZ_T_SRC_PGPORT=$KZ_PG15_PGPORT \
					bash "$ROOT/test/t/dump_restore.sh" > "$log" 2>&1 || rc=$?
			fi
		else
			bash "$ROOT/test/t/pg_upgrade.sh" > "$log" 2>&1 || rc=$?
		fi
		k=$(grep -c '^ok [0-9].* # SKIP' "$log" || true)
		p=$(( $(grep -c '^ok [0-9]' "$log" || true) - k ))
		f=$(grep -c '^not ok [0-9]' "$log" || true)
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
		grep -v '^ok [0-9]' "$log" | head -n 120 || true
		echo "cross/$t: $p ok, $f not ok, $k skipped, exit $rc (full output: $log)"
		pass=$((pass + p)); fail=$((fail + f)); skipped=$((skipped + k))
	done
	echo "cross $pass $fail $skipped" >> "$KZ_RESULTS"
}
