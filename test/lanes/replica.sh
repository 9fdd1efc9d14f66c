# shellcheck shell=bash
# Lane "replica" (issue 15, decisions/0085): pulls on a streaming hot standby
# of the test cluster and in READ ONLY transactions.  Starts the standby
# (test/replica/standby.sh: pg_basebackup -R into $KZ_RUNDIR/standby, port
# KZ_STANDBY_PORT, default KZ_PORT + 1), then runs
#   - the corpus replay with every pull on the standby, and with every pull
#     in a READ ONLY transaction on the primary (replay.py --pull-via), each
#     write on the primary and each pull after the standby replayed it;
#   - the randomized stress with the pullers on the standby (pull_stress.py
#     --pull-via standby: plain, bucket subsets, big transactions);
#   - the dangerous window, frozen at chosen points (test/replica/window.py);
#   - what a standby answers and refuses (test/replica/checks.py);
# and stops and removes the standby.  Appends replay-standby,
# replay-readonly, replica-stress and replica lines to $KZ_RESULTS.
KZ_EXTRA_LANES="$KZ_EXTRA_LANES replica"

lane_replica() {
	echo "== lane: replica (hot standby and READ ONLY pulls)"
	local via args ok=0 fail=0 p f totals=$KZ_OUT/replica-totals
	export KZ_STANDBY_PORT=${KZ_STANDBY_PORT:-$((KZ_PORT + 1))}
	if ! bash "$ROOT/test/replica/standby.sh" start; then
		echo "!! replica: the standby did not start (see $KZ_RUNDIR/standby.log)"
		echo "replica 0 1 0" >> "$KZ_RESULTS"
		return
	fi
	if corpus_present replay-standby; then
		for via in standby readonly; do
			python3 "$ROOT/test/tools/replay.py" run --pull-via "$via" \
				--standby "host=$PGHOST port=$KZ_STANDBY_PORT" --corpus "$KZ_CORPUS" --cases "$ROOT/cases" \
				--out "$KZ_OUT/replay-$via" --results "$KZ_RESULTS" ||
				echo "!! replay --pull-via $via: cases differ from their pins (see above)"
		done
	fi
	for args in "" "--subsets" "--big-txns"; do
		# shellcheck disable=SC2086
		if python3 "$ROOT/test/tools/pull_stress.py" --seconds "${KZ_STRESS_SECONDS:-12}" --pull-via standby $args; then
			ok=$((ok + 1))
		else
			fail=$((fail + 1))
		fi
	done
	echo "replica-stress $ok $fail 0" >> "$KZ_RESULTS"
	rm -f "$totals"
	KZ_REPLICA_TOTALS=$totals python3 "$ROOT/test/replica/window.py" || true
	KZ_REPLICA_TOTALS=$totals python3 "$ROOT/test/replica/checks.py" || true
	ok=0 fail=0
	while read -r p f; do ok=$((ok + p)); fail=$((fail + f)); done < "$totals"
	[ "$(wc -l < "$totals")" -eq 2 ] || fail=$((fail + 1))
	echo "replica $ok $fail 0" >> "$KZ_RESULTS"
	bash "$ROOT/test/replica/standby.sh" stop
}
