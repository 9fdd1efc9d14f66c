# shellcheck shell=bash
# Lane "monitoring" (issue 31 part 2, README "Monitoring"): the alerting
# rules of monitoring/alerts.yml checked by promtool (`check rules`, then
# `test rules` with test/monitoring/alerts_test.yml: each alert fires on
# the series that should fire it), and test/monitoring/check.py: Debian's
# real prometheus-postgres-exporter started against the test cluster with
# monitoring/queries.yaml as a non-superuser login that holds only
# pg_monitor, scraped on localhost, every metric checked against the
# database (its self-test first: a metric whose view is missing must be
# reported missing).  Appends "monitoring <passed> <failed> <skipped>";
# SKIPPED, loudly, only when the exporter or promtool is not installed
# (scripts/deps.sh installs both).  About 30 s.
KZ_EXTRA_LANES="$KZ_EXTRA_LANES monitoring"

lane_monitoring() {
	echo "== lane: monitoring (promtool on monitoring/alerts.yml; prometheus-postgres-exporter scraped, test/monitoring/check.py)"
	local log=$KZ_OUT/monitoring.log rc=0 p f k
	if [ ! -x /usr/bin/promtool ] || [ ! -x /usr/bin/prometheus-postgres-exporter ]; then
		echo "!! SKIPPED lane monitoring: promtool or prometheus-postgres-exporter is not installed (apt install prometheus prometheus-postgres-exporter; scripts/deps.sh does)"
		echo "monitoring 0 0 1" >> "$KZ_RESULTS"
		return
	fi
	{
		if promtool check rules "$ROOT/monitoring/alerts.yml"; then
			echo "ok - promtool check rules monitoring/alerts.yml"
		else
			echo "not ok - promtool check rules monitoring/alerts.yml"
		fi
		if (cd "$ROOT" && promtool test rules test/monitoring/alerts_test.yml); then
			echo "ok - promtool test rules test/monitoring/alerts_test.yml"
		else
			echo "not ok - promtool test rules test/monitoring/alerts_test.yml"
		fi
		KZ_EXPORTER_PORT=${KZ_EXPORTER_PORT:-$((PGPORT + 7))} python3 "$ROOT/test/monitoring/check.py" || rc=$?
	} > "$log" 2>&1
	grep -Ev '^ok ' "$log" || true
	k=$(grep -c '# SKIP' "$log" || true)
	p=$(grep -c '^ok ' "$log" || true)
	f=$(grep -c '^not ok ' "$log" || true)
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	echo "monitoring: $p ok, $f not ok, $k skipped, exit $rc (full output: $log)"
	echo "monitoring $p $f $k" >> "$KZ_RESULTS"
}
