# shellcheck shell=bash
# Lane "roles": the security claims of issue 10 / decisions/0060, each proved
# as ordinary LOGIN roles with their own sessions (test/roles/README.md).
KZ_EXTRA_LANES="$KZ_EXTRA_LANES roles"

lane_roles() {
	echo "== lane: roles (test/roles/*.sql as ordinary LOGIN roles, own sessions)"
	local rc=0 p f
	rm -f "$KZ_OUT/roles/totals"
	bash "$ROOT/test/roles/run.sh" || rc=$?
	if read -r p f < "$KZ_OUT/roles/totals" 2>/dev/null; then
		echo "roles $p $f 0" >> "$KZ_RESULTS"
	else
		echo "!! roles: the runner ended without totals (exit $rc)"
		echo "roles 0 1 0" >> "$KZ_RESULTS"
	fi
}
