#!/usr/bin/env bash
# Runner of the roles lane (test/roles/README.md).
#
#   bash test/roles/run.sh [test/roles/X.sql ...]     (default: every [a-z]_*.sql)
#
# Needs a running cluster (PGHOST, PGPORT; PGUSER a superuser, normally
# postgres) with the extension installed.  For each test file:
#   * drops and creates its database (header line "-- db: NAME"; with
#     "-- owner: ROLE" the database is created OWNER ROLE, a LOGIN NOSUPERUSER
#     role the runner creates), installs test/setup/standins.sql,
#     CREATE EXTENSION kizunasync and test/roles/lib.sql, as postgres;
#   * runs the file with psql as postgres (the file opens the role sessions
#     itself with \connect); the file's assertions print "ok - ..." or
#     "not ok - ..." lines, which are numbered here;
#   * counts as failures, besides "not ok" lines: a psql exit status other
#     than 0 (an unexpected error in a setup step stops the file), a lost
#     connection or crashed backend, and every assertion the file's
#     "-- plan: N" header promises but did not print.
# Roles are cluster-wide: every role of the lane is named kz_r_* (plus
# kz_dbowner and kz_app_owner, the names of the issue); all of them and the
# kz_roles_* databases are dropped before and after the run
# (KZ_ROLES_KEEP=1 keeps them after).
# Writes the totals to $KZ_OUT/roles/totals ("<passed> <failed>"); exits
# non-zero when anything failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${KZ_OUT:-$ROOT/test/out}/roles
mkdir -p "$OUT"
chmod 777 "$OUT" 2>/dev/null || true
PSQL=(psql -X -q -v ON_ERROR_STOP=1)

if [ $# -eq 0 ]; then
	set -- "$ROOT"/test/roles/[a-z]_*.sql
fi

python3 "$ROOT/test/roles/gen_names.py" "$ROOT" "$OUT/shadows.sql" || { echo "roles: gen_names.py failed"; echo "0 1" > "$OUT/totals"; exit 1; }

cleanup() {
	local db role
	for db in $("${PSQL[@]}" -At -d postgres -c "SELECT datname FROM pg_database WHERE datname LIKE 'kz\_roles\_%' ORDER BY 1"); do
		dropdb --if-exists --force "$db" || echo "roles: could not drop database $db"
	done
	for role in $("${PSQL[@]}" -At -d postgres -c "SELECT rolname FROM pg_roles WHERE rolname LIKE 'kz\_r\_%' OR rolname IN ('kz_dbowner', 'kz_app_owner') ORDER BY 1"); do
		# DROP OWNED also revokes what the role was granted on shared objects (parameters)
		"${PSQL[@]}" -d postgres -c "DROP OWNED BY $role" -c "DROP ROLE $role" >/dev/null || echo "roles: could not drop role $role"
	done
}
cleanup
if [ "${KZ_ROLES_KEEP:-0}" != 1 ]; then
	# an attacker role that became a superuser must not outlive the run
	trap cleanup EXIT
fi

fresh_db() {	# db [owner]
	local db=$1 owner=${2:-}
	if [ -n "$owner" ]; then
		"${PSQL[@]}" -d postgres -c "CREATE ROLE $owner LOGIN NOSUPERUSER" >/dev/null || return 1
		createdb -O "$owner" "$db" || return 1
	else
		createdb "$db" || return 1
	fi
	"${PSQL[@]}" -d "$db" -f "$ROOT/test/setup/standins.sql" >/dev/null || return 1
	"${PSQL[@]}" -d "$db" -c 'CREATE EXTENSION kizunasync' >/dev/null || return 1
	"${PSQL[@]}" -d "$db" -f "$ROOT/test/roles/lib.sql" >/dev/null || return 1
}

n=0
passed=0
failed=0
for f in "$@"; do
	name=$(basename "$f" .sql)
	db=$(sed -n 's/^-- db: *\([a-z0-9_]*\).*/\1/p' "$f" | head -1)
	owner=$(sed -n 's/^-- owner: *\([a-z0-9_]*\).*/\1/p' "$f" | head -1)
	plan=$(sed -n 's/^-- plan: *\([0-9]*\).*/\1/p' "$f" | head -1)
	log=$OUT/$name.out
	echo "# ---- $name (database $db${owner:+, owner $owner}, plan $plan)"
	t0=$(date +%s.%N)
	if ! fresh_db "$db" "$owner" >"$log" 2>&1; then
		cat "$log"
		echo "not ok $((n += 1)) - $name: could not create database $db"
		failed=$((failed + 1))
		continue
	fi
	rc=0
	"${PSQL[@]}" -At -v gen="$OUT/shadows.sql" -v root="$ROOT" -d "$db" -f "$f" >>"$log" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	ok=0 nok=0
	while IFS= read -r line; do
		case $line in
			'ok - '*) n=$((n + 1)); ok=$((ok + 1)); echo "ok $n - ${line#ok - }" ;;
			'not ok - '*) n=$((n + 1)); nok=$((nok + 1)); echo "not ok $n - ${line#not ok - }" ;;
			'# '*) echo "$line" ;;
		esac
	done < "$log"
	extra=0
	if [ $rc -ne 0 ]; then
		echo "not ok $((n += 1)) - $name: psql exited with status $rc (an unexpected error stopped the file; see $log)"
		grep -E '^psql:.*ERROR' "$log" | tail -3 | sed 's/^/#   /'
		extra=$((extra + 1))
	fi
	if grep -Eq 'server closed the connection unexpectedly|terminated by signal|connection to server was lost|PANIC:|TRAP:' "$log"; then
		echo "not ok $((n += 1)) - $name: a backend crashed or a connection was lost (see $log)"
		extra=$((extra + 1))
	fi
	if [ -n "$plan" ] && [ $((ok + nok)) -ne "$plan" ]; then
		missing=$((plan - ok - nok))
		if [ $missing -gt 0 ]; then
			echo "not ok $((n += 1)) - $name: $missing of $plan planned assertions never ran"
			extra=$((extra + missing))
			n=$((n + missing - 1))
		else
			echo "not ok $((n += 1)) - $name: $((ok + nok)) assertions ran, $plan planned (fix the plan)"
			extra=$((extra + 1))
		fi
	fi
	passed=$((passed + ok))
	failed=$((failed + nok + extra))
	printf '# %s: %d ok, %d not ok%s (%.1f s)\n' "$name" $ok $((nok + extra)) \
		"$([ $extra -gt 0 ] && echo ", $extra from the runner")" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')"
done

echo "# roles: $passed passed, $failed failed"
echo "$passed $failed" > "$OUT/totals"
[ "$failed" -eq 0 ]
