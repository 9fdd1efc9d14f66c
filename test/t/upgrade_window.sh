#!/usr/bin/env bash
# shellcheck disable=SC2016  # SQL in single quotes is meant literally
# Issue 23 item 1: the upgrade window.  A database still at a released
# version's SQL objects while this library is installed (the files of a
# newer release were installed, ALTER EXTENSION ... UPDATE has not run).
# 0.1.0's PL/pgSQL SECURITY DEFINER functions (sync_table, unsync_table,
# schedule_jobs) resolve types and relations in the caller's pg_temp first:
# an attacker's temporary domain ran its CHECK as the superuser extension
# owner.  For every released version in test/t/releases:
#   a. control: on a database left as it is, in a session that has not
#      loaded this library, the attack works (the detector can fail; this is
#      what scripts/harden-0.1.0.sql closes);
#   b. in a session that has loaded this library, the same call is refused
#      (55000) before the function's body runs: no escalation;
#   c. scripts/harden-0.1.0.sql (the documented first step, run by the
#      superuser): afterwards no session can escalate through schedule_jobs
#      (a LOGIN member of service_role), library loaded or not (0.1.0's
#      sync_table and unsync_table are executable by superusers only);
#   d. ALTER EXTENSION kizunasync UPDATE after the hardening gives exactly
#      the objects of a fresh install, and the attack still fails.
# Attackers are ordinary LOGIN roles, each in its own session (psql -U).
T_NAME=upgrade_window
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_uw_owner}
EVIL=kz_t_uw_mallory
owner_role "$T_OWNER" || bail "cannot create role $T_OWNER"
owner_role "$EVIL" || bail "cannot create role $EVIL"
q postgres -c "GRANT service_role TO $EVIL" >/dev/null || bail "cannot grant service_role"
NEW=kz_t_uw_fresh
newdb $NEW && q $NEW -f "$T_ROOT/test/setup/standins.sql" >/dev/null &&
	q $NEW -c "CREATE EXTENSION kizunasync" >/dev/null || bail "cannot install the current version"

is_super() { q postgres -c "SELECT rolsuper FROM pg_roles WHERE rolname = '$1'"; }
unsuper() { q postgres -c "ALTER ROLE $1 NOSUPERUSER" >/dev/null; }

# plant ROLE: psql text that plants, in this session's pg_temp, domains
# jsonb and text whose CHECK makes ROLE a superuser when it runs as one
plant() {
	cat <<SQL
CREATE FUNCTION pg_temp.kz_evil(v text) RETURNS boolean LANGUAGE plpgsql AS \$e\$
BEGIN
	EXECUTE 'ALTER ROLE $1 SUPERUSER';
	RETURN true;
EXCEPTION WHEN insufficient_privilege THEN
	RETURN true;
END
\$e\$;
CREATE DOMAIN pg_temp.jsonb AS pg_catalog.jsonb CHECK (pg_temp.kz_evil(VALUE::pg_catalog.text));
CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (pg_temp.kz_evil(VALUE));
SQL
}
# attack DB ROLE LOAD CALL: in ROLE's own session, plant, optionally load
# this library (LOAD=1: one call of a C function of the extension), then
# run CALL; prints the SQLSTATE it ended with
attack() {
	local db=$1 role=$2 load=$3 call=$4 pre=""
	# one call of a C function of the extension loads this library (0.1.0's
	# pull is refused by it, which does not matter here)
	[ "$load" = 1 ] && pre="SET ROLE service_role;
DO \$l\$ BEGIN PERFORM kizunasync.pull('[]', NULL, 1); EXCEPTION WHEN others THEN NULL; END \$l\$;
RESET ROLE;"
	sqlstate "$db" "$role" "$(plant "$role")
$pre
$call" | cut -c1-5
}
SCHEDULE="SET ROLE service_role; SELECT kizunasync.schedule_jobs();"

grep -v '^#' "$T_DIR/releases" | while read -r ver _; do
	[ -n "$ver" ] || continue
	echo "$ver"
done > "$T_OUT/versions"
[ -s "$T_OUT/versions" ] || bail "no released version in $T_DIR/releases"

while read -r VER; do
	OLD=kz_t_uw_${VER//./_}
	dropdb --if-exists --force $OLD >/dev/null 2>&1
	createdb -T template0 -O "$T_OWNER" $OLD && T_DBS+=("$OLD") &&
		q $OLD -f "$T_ROOT/test/setup/standins.sql" >/dev/null &&
		q $OLD -c "CREATE EXTENSION kizunasync VERSION '$VER'; GRANT USAGE ON SCHEMA auth, storage TO $T_OWNER" >/dev/null ||
		bail "cannot install $VER with the current files"

	# a. the attack is live on an untouched database, library not loaded
	st=$(attack $OLD $EVIL 0 "$SCHEDULE")
	if [ "$(is_super $EVIL)" = t ]; then
		ok "$VER control: schedule_jobs() escalated a session that never loaded the library (the residual the hardening closes; $st)"
		unsuper $EVIL
	else
		ok "$VER control: schedule_jobs() did not escalate ($st): nothing SQL-language left to attack in $VER"
	fi

	# b. a session that loaded this library is refused before the body runs
	st=$(attack $OLD $EVIL 1 "$SCHEDULE")
	check "$VER, library loaded: schedule_jobs() as a service_role member is refused" "$st" 55000
	check "$VER, library loaded: $EVIL is not a superuser" "$(is_super $EVIL)" f; unsuper $EVIL

	# c. the documented first step, then the attacks, loaded or not
	q $OLD -f "$T_ROOT/scripts/harden-0.1.0.sql" > "$T_OUT/harden.$VER.out" 2>&1 ||
		notok "$VER: scripts/harden-0.1.0.sql ran" "$(head -n 5 "$T_OUT/harden.$VER.out")"
	for load in 0 1; do
		st=$(attack $OLD $EVIL $load "$SCHEDULE")
		check "$VER hardened (library loaded: $load): schedule_jobs() by $EVIL escalates nothing ($st)" "$(is_super $EVIL)" f
		unsuper $EVIL
	done
	check "$VER: the hardening is idempotent" \
		"$(q $OLD -f "$T_ROOT/scripts/harden-0.1.0.sql" 2>&1 | grep -c 'now run as their caller')" 1

	# d. the update, then the same objects as a fresh install
	q $OLD -c "ALTER EXTENSION kizunasync UPDATE" > "$T_OUT/update.$VER.out" 2>&1 ||
		notok "$VER: ALTER EXTENSION kizunasync UPDATE after the hardening" "$(head -n 5 "$T_OUT/update.$VER.out")"
	q $NEW -f "$T_DIR/schema_objects.sql" > "$T_OUT/fresh.objects" 2>&1
	q $OLD -f "$T_DIR/schema_objects.sql" > "$T_OUT/upgraded.$VER.objects" 2>&1
	check_same "$VER hardened and updated: the same objects as a fresh install" "$T_OUT/fresh.objects" "$T_OUT/upgraded.$VER.objects"
	st=$(attack $OLD $EVIL 0 "$SCHEDULE")
	check "$VER updated: schedule_jobs() by $EVIL escalates nothing ($st)" "$(is_super $EVIL)" f; unsuper $EVIL
done < "$T_OUT/versions"

finish
