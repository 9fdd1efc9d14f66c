#!/usr/bin/env bash
# Build and run libFuzzer targets for a bounded time:
#
#   fuzz/run.sh [SECONDS] [NAME...]     (default 60 s, every fuzz/fuzz_*.c)
#
# For each target: build it (fuzz/build.sh), make a fresh corpus directory
# under fuzz/build/NAME/, seed it with fuzz/seed_NAME.py when that exists
# (seeds come from the golden corpus at $KZ_CORPUS, default ../shared/corpus;
# nothing from it is ever written into the repository), run the fuzzer with
# fuzz/NAME.dict and the FUZZ_OPTS of fuzz/NAME.conf, and print
#
#   fuzz NAME: <executions> executions in <s> s, <n> corpus inputs, <k> findings
#
# Findings (crash-*, leak-*, timeout-*, oom-* reproducers) stay in
# fuzz/build/NAME/artifacts/; reproduce one with
# fuzz/build/fuzz_NAME fuzz/build/NAME/artifacts/<file>.
# Exit status is non-zero when any target crashed or left a finding.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECS=${1:-60}
shift || true
export KZ_CORPUS=${KZ_CORPUS:-$ROOT/../shared/corpus}

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for f in fuzz/fuzz_*.c; do
		[ -e "$f" ] || continue
		n=${f#fuzz/fuzz_}; names+=("${n%.c}")
	done
fi

status=0
for NAME in "${names[@]}"; do
	FUZZ_OPTS=""
	# shellcheck disable=SC1090
	[ -f "fuzz/$NAME.conf" ] && . "fuzz/$NAME.conf"
	bash fuzz/build.sh "$NAME"

	work=fuzz/build/$NAME
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts"
	if [ -f "fuzz/seed_$NAME.py" ]; then
		python3 "fuzz/seed_$NAME.py" "$KZ_CORPUS" "$work/corpus"
	fi

	opts=(-max_total_time="$SECS" -print_final_stats=1 -timeout=10
		  -artifact_prefix="$work/artifacts/")
	[ -f "fuzz/$NAME.dict" ] && opts+=(-dict="fuzz/$NAME.dict")
	# shellcheck disable=SC2206
	opts+=($FUZZ_OPTS)

	log=$work/fuzz.log
	rc=0
	"fuzz/build/fuzz_$NAME" "${opts[@]}" "$work/corpus" >"$log" 2>&1 || rc=$?

	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
	inputs=$(find "$work/corpus" -type f | wc -l)
	findings=$(find "$work/artifacts" -type f | wc -l)
	echo "fuzz $NAME: ${execs:-?} executions in ${took:-?} s, $inputs corpus inputs, $findings findings (exit $rc)"
	if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
		echo "!! fuzz $NAME failed; last lines of $log:"
		tail -n 40 "$log"
		ls -l "$work/artifacts"
		status=1
	fi
done
exit $status
