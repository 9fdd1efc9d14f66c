# shellcheck shell=bash
# Lane "layout": the layout rules of src/ (issue 13, README "Layout"),
# checked by scripts/check_layout.py: no include cycle (x.c and x.h are one
# node), no .c file above 800 lines, no function above 150 lines without a
# "Kept whole: <reason>" comment, no header including postgres.h, every
# exported function declared in its own file's header.  The checker's
# self-test runs first: it builds trees that break each rule and wants each
# caught, so the lane cannot pass with a checker that cannot fail.
# Then the packaging checks of scripts/check_package.sh (issue 23 item 12:
# no test-only entry point in the production library, no empty-version
# install script, the build refuses an empty version).
# Appends "layout <passed> <failed> 0" to $KZ_RESULTS (one count per rule,
# per self-test case and per packaging check).  Needs no cluster; a few
# seconds.
KZ_EXTRA_LANES="$KZ_EXTRA_LANES layout"

lane_layout() {
	echo "== lane: layout (scripts/check_layout.py: include graph, sizes, headers)"
	local log=$KZ_OUT/layout.log rc=0 p f
	{
		python3 "$ROOT/scripts/check_layout.py" --self-test || rc=$?
		python3 "$ROOT/scripts/check_layout.py" --src "$ROOT/src" || rc=$?
		bash "$ROOT/scripts/check_package.sh" "$PG_CONFIG" || rc=$?
	} > "$log" 2>&1
	grep -v '^ok ' "$log" | grep -v '^1\.\.' || true
	p=$(grep -c '^ok ' "$log" || true)
	f=$(grep -c '^not ok ' "$log" || true)
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	echo "layout: $p ok, $f not ok, exit $rc (full output: $log)"
	echo "layout $p $f 0" >> "$KZ_RESULTS"
}
