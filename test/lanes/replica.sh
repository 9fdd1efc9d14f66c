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
#
# The whole lane runs with wal_consistency_checking = 'all' on the primary
# (issue 21 item 4, decisions/0010): every WAL record carries a full image of
# the pages it touches and the standby compares the page it rebuilt by replay
# with that image, failing with "inconsistent page found" when they differ
# (a redo that does not reproduce what the primary wrote, as the bookkeeping's
# direct heap and index writes could).  The setting is set before the base
# backup and reset when the lane ends; afterwards the standby's log must show
# no inconsistent page and no startup process FATAL/PANIC or abnormal exit:
# one more check in the replica line (and one for the grep's self-test on a
# fabricated log).
KZ_EXTRA_LANES="$KZ_EXTRA_LANES replica"

# the lines of a standby log that mean a failed replay: an inconsistent page
# (wal_consistency_checking; the startup process fails with it), a PANIC, the
# startup process ending abnormally (the postmaster's line after its FATAL)
replica_log_problems() {
	grep -E 'inconsistent page|PANIC:|startup process \(PID [0-9]+\) (exited with exit code [1-9]|was terminated)' "$1"
}

replica_primary_sql() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres -c "$1"; }

replica_walcheck_reset() {
	replica_primary_sql "ALTER SYSTEM RESET wal_consistency_checking" >/dev/null &&
		replica_primary_sql "SELECT pg_reload_conf()" >/dev/null ||
		echo "!! replica: could not reset wal_consistency_checking on the primary"
}

lane_replica() {
	echo "== lane: replica (hot standby and READ ONLY pulls)"
	local via args ok=0 fail=0 p f totals=$KZ_OUT/replica-totals
	export KZ_STANDBY_PORT=${KZ_STANDBY_PORT:-$((KZ_PORT + 1))}
	local slog=$KZ_RUNDIR/standby.log logfrom wal0 walcheck=0 walfail=0 scratch t0=$SECONDS
	# the grep's own negative control: it fires on a fabricated
	# inconsistent-page line, and not on an ordinary log
	scratch=$(mktemp)
	printf '%s\n' '2026-01-01 00:00:00 UTC [1] LOG:  redo starts at 0/2000028' > "$scratch"
	if replica_log_problems "$scratch" >/dev/null; then walfail=$((walfail + 1)); echo "!! replica: the log check fires on a clean log"; fi
	printf '%s\n' '2026-01-01 00:00:00 UTC [1] FATAL:  inconsistent page found, rel 1663/16384/16385, forknum 0, blkno 0' >> "$scratch"
	if replica_log_problems "$scratch" >/dev/null; then walcheck=$((walcheck + 1)); else walfail=$((walfail + 1)); echo "!! replica: the log check misses an inconsistent page"; fi
	rm -f "$scratch"
	# every record from here on is checked on replay by the standby
	if ! replica_primary_sql "ALTER SYSTEM SET wal_consistency_checking = 'all'" >/dev/null ||
		! replica_primary_sql "SELECT pg_reload_conf()" >/dev/null; then
		echo "!! replica: could not set wal_consistency_checking on the primary"
		walfail=$((walfail + 1))
	fi
	sleep 1	# the reload reaches every backend before the base backup
	echo "# replica: wal_consistency_checking on the primary: $(replica_primary_sql "SHOW wal_consistency_checking")"
	wal0=$(replica_primary_sql "SELECT wal_records || ' ' || wal_fpi || ' ' || pg_current_wal_lsn() FROM pg_stat_wal")
	logfrom=$(($( [ -f "$slog" ] && wc -c < "$slog" || echo 0) + 1))
	if ! bash "$ROOT/test/replica/standby.sh" start; then
		echo "!! replica: the standby did not start (see $KZ_RUNDIR/standby.log)"
		echo "replica 0 1 0" >> "$KZ_RESULTS"
		replica_walcheck_reset
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
	# the standby replays everything the lane wrote, then its log (this
	# lane's part of it) must show no failed replay
	local lsn1 problems caught=NO
	lsn1=$(replica_primary_sql "SELECT pg_current_wal_lsn()")
	for _ in $(seq 1 600); do
		if [ "$(psql -X -q -At -p "$KZ_STANDBY_PORT" -d postgres -c "SELECT pg_last_wal_replay_lsn() >= '$lsn1'" 2>/dev/null)" = t ]; then
			caught=yes
			break
		fi
		sleep 0.2
	done
	read -r r0 f0 l0 <<< "$wal0"
	echo "# replica: WAL written with wal_consistency_checking = all and replayed by the standby:" \
		"$(replica_primary_sql "SELECT (wal_records - $r0) || ' records, ' || (wal_fpi - $f0) || ' full-page images, ' ||
			pg_size_pretty(pg_wal_lsn_diff('$lsn1', '$l0')) FROM pg_stat_wal")" \
		"(replayed through $lsn1: $caught)"
	[ $caught = yes ] || walfail=$((walfail + 1))
	problems=$(tail -c +"$logfrom" "$slog" | replica_log_problems /dev/stdin)
	if [ -z "$problems" ] && [ -s "$slog" ]; then
		walcheck=$((walcheck + 1))
		echo "# replica: the standby's log shows no inconsistent page and no failed replay"
	else
		walfail=$((walfail + 1))
		echo "!! replica: the standby's log ($slog) shows a failed replay:"
		echo "$problems" | head -20
	fi
	echo "# replica: the lane ran $((SECONDS - t0)) s with wal_consistency_checking = all; WAL checks: $walcheck passed, $walfail failed"
	echo "replica $((ok + walcheck)) $((fail + walfail)) 0" >> "$KZ_RESULTS"
	bash "$ROOT/test/replica/standby.sh" stop
	replica_walcheck_reset
}
