#!/usr/bin/env bash
# Runs every test lane of kizunasync on this machine, from nothing:
# installs the packages, builds and installs the extension, starts a private
# cluster (as the postgres OS user, socket under /tmp), runs
#   1. pg_regress + isolation tests      (make installcheck: test/sql, test/specs)
#   2. pgTAP tests                       (pg_prove test/pgtap/*.sql, test/pgtap/cron)
#   3. corpus lanes: cursor vectors, golden-transcript replay
#                                        (read from $KZ_CORPUS, default ../shared/corpus)
#   4. randomized end-to-end stress, libFuzzer targets, the crash test (test/t)
#   5. the lanes of test/lanes/*.sh (ops, roles, layout, replica; packages:
#      the Debian packages built, linted, installed into clean roots; pg17:
#      the lanes again against PostgreSQL 17 in a Debian 13 root, and 15
#      to 17 by dump/restore and pg_upgrade; KZ_PG17=0 leaves it out)
# stops the cluster and ends with one line "N passed, N failed".
# test/README.md describes every directory and lane, and how to run one test.
# Exit status is non-zero when anything failed.
#
# Environment: KZ_CORPUS, KZ_PORT, KZ_RUNDIR, PG_CONFIG, KZ_SKIP_DEPS=1, KZ_PG17=0, KZ_PACKAGES=0,
# KZ_LANES="regress pgtap vectors replay" (subset to run), KZ_KEEP_CLUSTER=1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export KZ_CORPUS=${KZ_CORPUS:-$ROOT/../shared/corpus}
export KZ_PORT=${KZ_PORT:-55432}
export KZ_RUNDIR=${KZ_RUNDIR:-/tmp/kizunasync-$KZ_PORT}
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
# Lanes beyond the built-in ones live in test/lanes/NAME.sh: each defines
# lane_NAME and appends NAME to KZ_EXTRA_LANES when it is sourced.
KZ_EXTRA_LANES=""
shopt -s nullglob
for f in "$ROOT"/test/lanes/*.sh; do
	# shellcheck disable=SC1090
	. "$f"
done
shopt -u nullglob
LANES=${KZ_LANES:-regress pgtap vectors replay stress fuzz crash$KZ_EXTRA_LANES}

[ "${KZ_SKIP_DEPS:-0}" = 1 ] || bash scripts/deps.sh
export PATH=$("$PG_CONFIG" --bindir):$PATH
# A lane may start slow preparation now, beside the build and the lanes
# before it (prepare_NAME, e.g. the pg17 lane's Debian 13 root).
for lane in $LANES; do
	if declare -F "prepare_$lane" >/dev/null; then "prepare_$lane"; fi
done

echo "== build"
make -s PG_CONFIG="$PG_CONFIG" >/dev/null
make -s PG_CONFIG="$PG_CONFIG" install >/dev/null
# the test-only extension kizunasync_test (test/ext), for test databases only
make -s PG_CONFIG="$PG_CONFIG" install-test >/dev/null

bash scripts/cluster.sh start
eval "$(bash scripts/cluster.sh env)"
export PGHOST PGPORT PGUSER
cleanup() { [ "${KZ_KEEP_CLUSTER:-0}" = 1 ] || bash "$ROOT/scripts/cluster.sh" stop; }
trap cleanup EXIT

export KZ_OUT=$ROOT/test/out
rm -rf "$KZ_OUT"; mkdir -p "$KZ_OUT"; chmod 777 "$KZ_OUT"
RESULTS=$KZ_OUT/lanes.txt
: > "$RESULTS"
# Each lane appends: "<lane> <passed> <failed> <skipped>"
export KZ_RESULTS=$RESULTS

# Roles are cluster-wide; the stand-ins script is idempotent.
psql -X -q -d postgres -f test/setup/standins.sql >/dev/null

lane_regress() {
	# pg_regress and the isolation tester run as two make calls, so a failure
	# in one never hides the other's results.
	local part log rc ok fail
	for part in regress isolation; do
		echo "== lane: $part (make installcheck)"
		log=$KZ_OUT/installcheck-$part.log; rc=0
		if [ $part = regress ]; then
			make -s PG_CONFIG="$PG_CONFIG" installcheck KZ_OUTDIR="$KZ_OUT" ISOLATION= >"$log" 2>&1 || rc=$?
		else
			make -s PG_CONFIG="$PG_CONFIG" installcheck KZ_OUTDIR="$KZ_OUT" REGRESS= >"$log" 2>&1 || rc=$?
		fi
		# pg_regress of 15 prints "test X ... ok", of 16 and later TAP
		# ("ok 1 - X", "not ok 2 - X")
		grep -E '\.\.\. |^(not )?ok [0-9]+ |tests (passed|failed)|^make' "$log" || true
		ok=$(grep -Ec '\.\.\. ok|^ok [0-9]+ ' "$log" || true)
		fail=$(grep -Ec '\.\.\. FAILED|\.\.\. failed|^not ok [0-9]+ ' "$log" || true)
		if [ $rc -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
		if [ -s "$KZ_OUT/$part/regression.diffs" ]; then
			echo "--- $KZ_OUT/$part/regression.diffs (first 200 lines)"
			head -200 "$KZ_OUT/$part/regression.diffs"
		fi
		echo "$part $ok $fail 0" >> "$RESULTS"
	done
}

# pg_prove over a set of files in database $1; counts assertions.
run_prove() {
	local lane=$1 db=$2; shift 2
	local log=$KZ_OUT/$lane.prove.log rc=0
	pg_prove -v -d "$db" "$@" >"$log" 2>&1 || rc=$?
	grep -Ev '^(ok [0-9]+)' "$log" | tail -n 60 || true
	local ok fail
	ok=$(grep -Ec '^ok [0-9]+' "$log" || true)
	fail=$(grep -Ec '^not ok [0-9]+' "$log" || true)
	if [ $rc -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
	echo "pg_prove ($lane): $ok assertions ok, $fail not ok, exit $rc"
	echo "$lane $ok $fail 0" >> "$RESULTS"
}

fresh_db() {
	local db=$1
	dropdb --if-exists "$db"
	createdb "$db"
	psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f test/setup/standins.sql >/dev/null
	# a new install numbers from the clock; the tests number from 1
	psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c 'CREATE EXTENSION pgtap; CREATE EXTENSION kizunasync; CREATE EXTENSION kizunasync_test; SELECT kizunasync_test.set_numbering(0);' >/dev/null
}

lane_pgtap() {
	echo "== lane: pgTAP"
	shopt -s nullglob
	local files=(test/pgtap/*.sql)
	if [ ${#files[@]} -eq 0 ]; then echo "pgtap: no test files"; echo "pgtap 0 0 0" >> "$RESULTS"; return; fi
	fresh_db kz_tap
	run_prove pgtap kz_tap "${files[@]}"
	# pg_cron scheduling, in the database pg_cron serves (scripts/cluster.sh)
	if psql -X -At -d postgres -c 'SHOW shared_preload_libraries' | grep -q pg_cron; then
		dropdb --if-exists --force kz_cron
		createdb kz_cron
		psql -X -q -v ON_ERROR_STOP=1 -d kz_cron -f test/setup/standins.sql >/dev/null
		psql -X -q -v ON_ERROR_STOP=1 -d kz_cron -c 'CREATE EXTENSION pgtap; CREATE EXTENSION kizunasync; CREATE EXTENSION pg_cron;' >/dev/null
		run_prove pgtap-cron kz_cron test/pgtap/cron/*.sql
	else
		echo "!! SKIPPED test/pgtap/cron: pg_cron is not preloaded in this cluster (install postgresql-$("$PG_CONFIG" --version | sed "s/[^0-9]*\([0-9]*\).*/\1/")-cron and recreate the cluster)"
		echo "pgtap-cron 0 0 1" >> "$RESULTS"
	fi
}

corpus_present() {
	if [ ! -f "$KZ_CORPUS/cases/manifest.json" ]; then
		echo "!! SKIPPED lane $1: no golden corpus at $KZ_CORPUS (set KZ_CORPUS to its directory)"
		echo "$1 0 0 1" >> "$RESULTS"
		return 1
	fi
}

lane_vectors() {
	echo "== lane: cursor token vectors ($KZ_CORPUS/spec/cursor-token-vectors.json)"
	corpus_present vectors || return 0
	if [ ! -f test/tools/gen_cursor_vectors.py ]; then
		echo "!! vectors lane not built yet"; echo "vectors 0 1 0" >> "$RESULTS"; return
	fi
	python3 test/tools/gen_cursor_vectors.py "$KZ_CORPUS/spec/cursor-token-vectors.json" > "$KZ_OUT/cursor_vectors.sql"
	fresh_db kz_vectors
	run_prove vectors kz_vectors "$KZ_OUT/cursor_vectors.sql"
}

lane_replay() {
	echo "== lane: golden-transcript replay"
	corpus_present replay || return 0
	if [ ! -f test/tools/replay.py ]; then
		echo "!! replay harness not built yet"; echo "replay 0 1 0" >> "$RESULTS"; return
	fi
	# Appends "corpus-check", "replay-selftest" and "replay" lines to $RESULTS;
	# a non-zero exit means a case left its pin (already counted as failed).
	python3 test/tools/replay.py run --corpus "$KZ_CORPUS" --cases cases \
		--out "$KZ_OUT/replay" --results "$RESULTS" ||
		echo "!! replay: cases differ from their pins or corpus problems (see above)"
}

# Randomized end-to-end stress (issue 3): writers with random aborts and
# held transactions, pullers paging through kizunasync.pull with small limits;
# every replica must equal the table row by row.  The seed is printed so a
# failure can be replayed (--seed N).  The fourth run adds big transactions
# (600 .. 1,500 rows of a bucket, and one of 100,000 rows) held open while
# the pullers pull: more seqs of a bucket in flight than a cursor can list
# as holes (issue 11), several idle at once, with probes asserting the
# delivery bound (issue 21 item 1).
lane_stress() {
	echo "== lane: stress (${KZ_STRESS_SECONDS:-12} s per run)"
	local ok=0 fail=0 args
	for args in "" "--subsets" "--scan-cap 3" "--big-txns"; do
		# shellcheck disable=SC2086
		if python3 test/tools/pull_stress.py --seconds "${KZ_STRESS_SECONDS:-12}" $args; then
			ok=$((ok + 1))
		else
			fail=$((fail + 1))
		fi
	done
	# what each device holds against what its user may SELECT, with
	# visibility changes and the remedy (issue 32; seeds printed, --seed replays)
	if python3 test/tools/vis_fuzz.py --seeds "${KZ_VIS_SEEDS:-5}"; then
		ok=$((ok + 1))
	else
		fail=$((fail + 1))
	fi
	echo "stress $ok $fail 0" >> "$RESULTS"
}

# libFuzzer targets (fuzz/fuzz_*.c), each for ${KZ_FUZZ_SECONDS:-60} s; one
# pass per target that ran clean.
lane_fuzz() {
	echo "== lane: fuzz (${KZ_FUZZ_SECONDS:-60} s per target)"
	local f name ok=0 fail=0
	for f in fuzz/fuzz_*.c; do
		[ -e "$f" ] || continue
		name=${f#fuzz/fuzz_}; name=${name%.c}
		if bash fuzz/run.sh "${KZ_FUZZ_SECONDS:-60}" "$name"; then
			ok=$((ok + 1))
		else
			fail=$((fail + 1))
		fi
	done
	echo "fuzz $ok $fail 0" >> "$RESULTS"
}

# SIGKILL a backend mid-push and check recovery (test/t/crash_push.sh);
# the script appends its own "crash <passed> <failed> 0" line.
lane_crash() {
	echo "== lane: crash (SIGKILL mid-push, recovery, ledger/rows/pull checks)"
	local rc=0
	bash test/t/crash_push.sh >"$KZ_OUT/crash.log" 2>&1 || rc=$?
	grep -Ev '^ok ' "$KZ_OUT/crash.log" || true
	if [ $rc -ne 0 ] && ! grep -q '^crash ' "$RESULTS"; then echo "crash 0 1 0" >> "$RESULTS"; fi
}

TIMES=$KZ_OUT/lane-times.txt
: > "$TIMES"
for lane in $LANES; do
	t0=$SECONDS
	"lane_$lane" || { echo "!! lane $lane crashed"; echo "$lane 0 1 0" >> "$RESULTS"; }
	echo "$lane $((SECONDS - t0))s" >> "$TIMES"
done

echo "== summary"
column -t "$RESULTS" 2>/dev/null || cat "$RESULTS"
echo "lane times: $(tr '\n' ' ' < "$TIMES")(total ${SECONDS}s)"
read -r P F S < <(awk '{p+=$2; f+=$3; s+=$4} END {print p+0, f+0, s+0}' "$RESULTS")
if [ "$S" -gt 0 ]; then
	echo "$P passed, $F failed, $S skipped"
else
	echo "$P passed, $F failed"
fi
[ "$F" -eq 0 ]
