# shellcheck shell=bash
# Lane "ops": operations tests in test/t/ (issue 12): the dump/restore round
# trip (dump_restore.sh), upgrades from every released version (upgrade.sh),
# writes that bypass ordinary triggers and repair_table (replica_writes.sh),
# re-created extensions and cursors from elsewhere (incarnations.sh), the
# long poll (long_poll.sh), third-party auth and small contract gaps
# (contract_gaps.sh); issue 23: a publication FOR ALL TABLES with a real
# subscriber (publication.sh), composite-array transforms and the no-op
# guard (mutation_edges.sh), the install's refusal of a schema it did not
# create (install_schema.sh), the upgrade window (upgrade_window.sh),
# retention with third-party subs and the ledger's bound per user
# (retention_edges.sh).
# Each script prints TAP; this lane counts its "ok",
# "not ok" and "# SKIP" lines and appends "ops <passed> <failed> <skipped>"
# to $KZ_RESULTS.  Sourced by scripts/test.sh (see test/lanes/README.md).
# About 4 minutes on the 2-core machine.
KZ_EXTRA_LANES="$KZ_EXTRA_LANES ops"

lane_ops() {
	echo "== lane: ops (test/t: dump/restore, upgrades, upgrade window, replica writes, publication, incarnations, long poll, contract gaps, mutation edges, install schema, retention edges)"
	local t log rc p f k pass=0 fail=0 skipped=0
	for t in dump_restore upgrade upgrade_window replica_writes publication incarnations long_poll contract_gaps mutation_edges install_schema retention_edges; do
		log=$KZ_OUT/t-$t.log; rc=0
		bash "$ROOT/test/t/$t.sh" > "$log" 2>&1 || rc=$?
		k=$(grep -c '^ok [0-9].* # SKIP' "$log" || true)
		p=$(( $(grep -c '^ok [0-9]' "$log" || true) - k ))
		f=$(grep -c '^not ok [0-9]' "$log" || true)
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
		# failures with their diagnostics (capped), then the summary line
		grep -v '^ok [0-9]' "$log" | head -n "${KZ_OPS_LOG_LINES:-250}" || true
		echo "ops/$t: $p ok, $f not ok, $k skipped, exit $rc (full output: $log)"
		pass=$((pass + p)); fail=$((fail + f)); skipped=$((skipped + k))
	done
	echo "ops $pass $fail $skipped" >> "$KZ_RESULTS"
}
