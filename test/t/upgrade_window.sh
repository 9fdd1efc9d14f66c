#!/usr/bin/env bash
# shellcheck disable=SC2016  # SQL in single quotes is meant literally
# Issue 23 item 1: the upgrade window.  A database still at a released
# version's SQL objects while this library is installed (the files of a
# newer release were installed, ALTER EXTENSION ... UPDATE has not run).
# 0.1.0's PL/pgSQL SECURITY DEFINER functions (sync_table, unsync_table,
# schedule_jobs) resolve types and relations in the caller's pg_temp first:
# an attacker's temporary domain ran its CHECK as the superuser extension
# owner.  For every released version in test/t/releases that declares a
# SQL-language SECURITY DEFINER function (0.1.0; for any other that it
# declares none is checked):
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
#      the objects of a fresh install, and the attack still fails;
#   e. (issue 29 item 7) the update refuses a schema kizunasync that a
#      non-superuser created before CREATE EXTENSION (42P06, nothing
#      changed), and succeeds after the ALTER SCHEMA its hint names;
#   f. (issue 29 item 7) an object outside the extension, not temporary,
#      over an internal helper the update drops makes the update refuse
#      (2BP01) naming it; dropped, the update succeeds.
# Attackers are ordinary LOGIN roles, each in its own session (psql -U).
T_NAME=upgrade_window
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_uw_owner}
DEFAULT=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$T_ROOT/kizunasync.control")
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

# The window exists for a release whose SQL objects include a SQL-language
# SECURITY DEFINER function (0.1.0); a later release declares none, which
# is checked here on its install, and its update is tested by upgrade.sh.
grep -v '^#' "$T_DIR/releases" | while read -r ver _; do
	[ -n "$ver" ] || continue
	echo "$ver"
done > "$T_OUT/releases"
[ -s "$T_OUT/releases" ] || bail "no released version in $T_DIR/releases"
: > "$T_OUT/versions"
while read -r VER; do
	PDB=kz_t_uw_probe
	dropdb --if-exists --force $PDB >/dev/null 2>&1
	newdb $PDB && q $PDB -f "$T_ROOT/test/setup/standins.sql" >/dev/null &&
		q $PDB -c "CREATE EXTENSION kizunasync VERSION '$VER'" >/dev/null || bail "cannot install $VER with the current files"
	n=$(q $PDB -c "SELECT count(*) FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		WHERE p.pronamespace = 'kizunasync'::regnamespace AND p.prosecdef AND l.lanname NOT IN ('c', 'internal')")
	if [ "$n" = 0 ]; then
		ok "$VER declares no SQL-language SECURITY DEFINER function: no upgrade window to attack"
	else
		echo "$VER" >> "$T_OUT/versions"
	fi
done < "$T_OUT/releases"

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

	# e. (issue 29 item 7) a schema kizunasync that the database owner, a
	# non-superuser, created before CREATE EXTENSION: the release adopted
	# it; the update refuses as CREATE EXTENSION now does, changes nothing,
	# and after the hint's ALTER SCHEMA it updates, and the owner's
	# provisioning works
	SDB=kz_t_uw_schema_${VER//./_}
	dropdb --if-exists --force $SDB >/dev/null 2>&1
	createdb -T template0 -O "$T_OWNER" $SDB && T_DBS+=("$SDB") &&
		q $SDB -f "$T_ROOT/test/setup/standins.sql" >/dev/null &&
		qo $SDB -c "CREATE SCHEMA kizunasync; CREATE TABLE public.kz_items (id int PRIMARY KEY, v text)" &&
		q $SDB -c "CREATE EXTENSION kizunasync VERSION '$VER'" >/dev/null 2>&1 ||
		bail "cannot install $VER into a schema $T_OWNER created"
	psql -X -q -d $SDB -v VERBOSITY=verbose -c "ALTER EXTENSION kizunasync UPDATE" > "$T_OUT/schema.$VER.out" 2>&1
	check "$VER in a schema $T_OWNER created: the update refuses (42P06, naming the owner, hinting ALTER SCHEMA) and changes nothing" \
		"$(grep -c '^ERROR:  42P06: schema "kizunasync" is owned by role "'"$T_OWNER"'", which is not a superuser' "$T_OUT/schema.$VER.out") $(grep -c '^HINT:  .*ALTER SCHEMA kizunasync OWNER TO' "$T_OUT/schema.$VER.out") $(q $SDB -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'")" \
		"1 1 $VER"
	q $SDB -c "ALTER SCHEMA kizunasync OWNER TO $(q $SDB -c "SELECT extowner::regrole FROM pg_extension WHERE extname = 'kizunasync'")" >/dev/null
	rc=0; q $SDB -c "ALTER EXTENSION kizunasync UPDATE" > "$T_OUT/schema.$VER.update" 2>&1 || rc=$?
	check "$VER in a schema $T_OWNER created, after the hint's ALTER SCHEMA: the update succeeds, $T_OWNER may not create in the schema, sync_table of its table works" \
		"$rc $(q $SDB -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'") $(q $SDB -c "SELECT has_schema_privilege('$T_OWNER', 'kizunasync', 'CREATE')") $(sqlstate $SDB "$T_OWNER" "SET client_min_messages = error; SELECT kizunasync.sync_table('public.kz_items');")" \
		"0 $DEFAULT f 00000"

	# f. (issue 29 item 7) a persistent object of a role (here an operator's
	# view) over an internal helper the update drops: the update refuses
	# (2BP01) naming it and its owner, changes nothing; once it is dropped,
	# the update succeeds.  (An ordinary role's temporary objects are
	# dropped instead, and a view over kizunasync.status survives:
	# test/t/upgrade.sh.)
	DDB=kz_t_uw_deps_${VER//./_}
	dropdb --if-exists --force $DDB >/dev/null 2>&1
	createdb -T template0 -O "$T_OWNER" $DDB && T_DBS+=("$DDB") &&
		q $DDB -f "$T_ROOT/test/setup/standins.sql" >/dev/null &&
		q $DDB -c "CREATE EXTENSION kizunasync VERSION '$VER'" >/dev/null &&
		q $DDB -c "CREATE VIEW public.kz_horizon AS SELECT kizunasync._horizon('0') AS h" >/dev/null ||
		bail "cannot install $VER with a view over _horizon"
	psql -X -q -d $DDB -v VERBOSITY=verbose -c "ALTER EXTENSION kizunasync UPDATE" > "$T_OUT/deps.$VER.out" 2>&1
	check "$VER with a view over an internal helper: the update refuses (2BP01, naming the view, its owner and the helper) and changes nothing" \
		"$(grep -c "^ERROR:  2BP01: objects that are not the extension's depend on objects the update drops or rebuilds" "$T_OUT/deps.$VER.out") $(grep -c '^DETAIL:  view public.kz_horizon (owner postgres) depends on function kizunasync._horizon(pg_catalog.text,integer)' "$T_OUT/deps.$VER.out") $(q $DDB -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'")" \
		"1 1 $VER"
	rc=0; q $DDB -c "DROP VIEW public.kz_horizon; ALTER EXTENSION kizunasync UPDATE" > "$T_OUT/deps.$VER.update" 2>&1 || rc=$?
	check "$VER: once the view is dropped, the update succeeds" \
		"$rc $(q $DDB -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'")" "0 $DEFAULT"
done < "$T_OUT/versions"

finish
