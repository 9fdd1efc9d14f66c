#!/usr/bin/env bash
# Packaging checks (issue 23 item 12), TAP lines, no cluster needed; run by
# the layout lane after the build:
#   - the production library exports none of the test-only entry points
#     (they live in test/ext's own library, kizunasync_test.so);
#   - `make install` installs no install script with an empty version and
#     nothing of the test extension;
#   - the build refuses a control file without default_version;
#   - the top level has expected/ and cases/ (the design card), test/ neither;
#   - META.json, debian/changelog and debian/control.in agree with
#     kizunasync.control (scripts/check_meta.py, after its self-test).
# Usage: bash scripts/check_package.sh [PG_CONFIG]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGC=${1:-${PG_CONFIG:-pg_config}}
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $1"; shift; [ $# -eq 0 ] || printf '#   %s\n' "$@"; }

lib=$ROOT/kizunasync.so
if [ ! -f "$lib" ]; then
	notok "the library is built ($lib)"
else
	syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -E '^(kzt_|kz_test_)' || true)
	if [ -z "$syms" ]; then ok "kizunasync.so exports no test-only entry point"
	else notok "kizunasync.so exports no test-only entry point" "$syms"; fi
fi

inst=$(make -C "$ROOT" -n -s install PG_CONFIG="$PGC" 2>&1)
bad=$(printf '%s\n' "$inst" | grep -oE "kizunasync--\.sql|kizunasync_test[^ ']*" | sort -u || true)
if [ -z "$bad" ]; then ok "make install installs no empty-version script and nothing of kizunasync_test"
else notok "make install installs no empty-version script and nothing of kizunasync_test" "$bad"; fi
if git -C "$ROOT" ls-files --error-unmatch sql/kizunasync--.sql >/dev/null 2>&1; then
	notok "sql/kizunasync--.sql is not committed"
else ok "sql/kizunasync--.sql is not committed"; fi

# the design card's top level (issue 23 item 11): expected output in
# expected/, our own transcripts in cases/ (corpus format), nothing of
# either left under test/
for want in expected/00_install.out cases/manifest.json; do
	if git -C "$ROOT" ls-files --error-unmatch "$want" >/dev/null 2>&1; then ok "$want is at the top level"
	else notok "$want is at the top level"; fi
done
left=$(git -C "$ROOT" ls-files test/expected test/replay/cases | head -n 3)
if [ -z "$left" ]; then ok "no expected output or own case is kept under test/"
else notok "no expected output or own case is kept under test/" "$left"; fi

# release metadata in step with kizunasync.control (issue 31): META.json,
# debian/changelog, debian/control.in (scripts/check_meta.py), after the
# checker's self-test (each rule broken in a scratch copy must be caught)
tap_from() {
	local out rc=0 line seen=0
	out=$("$@" 2>&1) || rc=$?
	while IFS= read -r line; do
		case $line in
			"ok "*) ok "${line#ok [0-9]* - }"; seen=1 ;;
			"not ok "*) notok "${line#not ok [0-9]* - }"; seen=1 ;;
			"#"*) echo "$line" ;;
		esac
	done <<< "$out"
	# (here-strings, not pipes: under pipefail, grep -q leaving early can fail printf with SIGPIPE)
	if [ $rc -ne 0 ] && ! grep -q '^not ok ' <<< "$out"; then
		notok "$* ran (exit $rc)" "$(printf '%s' "$out" | tail -n 5)"
	elif [ $seen = 0 ]; then notok "$* printed results"; fi
}
tap_from python3 "$ROOT/scripts/check_meta.py" --self-test --root "$ROOT"
tap_from python3 "$ROOT/scripts/check_meta.py" --root "$ROOT"

tmp=$(mktemp -d)
cp "$ROOT/Makefile" "$tmp/"
sed '/^default_version/d' "$ROOT/kizunasync.control" > "$tmp/kizunasync.control"
out=$(make -C "$tmp" -n PG_CONFIG="$PGC" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q 'no default_version' <<< "$out"; then
	ok "the build refuses a control file without default_version"
else
	notok "the build refuses a control file without default_version" "exit $rc: $(printf '%s' "$out" | head -n 3)"
fi
rm -rf "$tmp"
echo "1..$n"
[ $fail -eq 0 ]
