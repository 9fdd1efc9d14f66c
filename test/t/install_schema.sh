#!/usr/bin/env bash
# Issue 23 item 3: CREATE EXTENSION refuses a schema "kizunasync" it did not
# create (decisions/0060).  The non-superuser database owner creates the
# schema first, in its own session; the superuser's CREATE EXTENSION (what
# Supabase's platform runs) must fail with 42P06 and a hint, leaving nothing
# of the extension behind; after the owner drops its schema the install
# works and the schema belongs to the superuser.  Also refused: a schema
# where a non-superuser may CREATE, and one that already holds objects.
# Still accepted: the schema DROP EXTENSION leaves behind (re-creating the
# extension); a restore's CREATE SCHEMA is covered by dump_restore.sh.
T_NAME=install_schema
# shellcheck source=test/t/lib.sh
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_is_owner}
DB=kz_t_is
owner_role "$T_OWNER" || bail "cannot create role $T_OWNER"
dropdb --if-exists --force "$DB" >/dev/null 2>&1
createdb -T template0 -O "$T_OWNER" "$DB" && T_DBS+=("$DB") || bail "cannot create database $DB"
q "$DB" -f "$T_ROOT/test/setup/standins.sql" >/dev/null || bail "cannot install the stand-ins"

# what the extension left in DB: its pg_extension row, objects in schema kizunasync
leftovers() {
	q "$DB" -c "SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'kizunasync') || ' extension, '
		|| (SELECT count(*) FROM pg_depend d JOIN pg_namespace n ON d.refclassid = 'pg_namespace'::regclass AND d.refobjid = n.oid
			WHERE n.nspname = 'kizunasync') || ' objects in the schema'"
}

# ---------------------------------------------------------------- the owner's schema
check "the database owner creates schema kizunasync in its own session" \
	"$(sqlstate "$DB" "$T_OWNER" "CREATE SCHEMA kizunasync")" "00000"
got=$(sqlstate "$DB" postgres "CREATE EXTENSION kizunasync")
check "the superuser's CREATE EXTENSION refuses the owner's schema (42P06)" "${got%% *}" "42P06"
check "the error names the schema and its owner" "${got#* }" \
	"schema \"kizunasync\" already exists and is owned by role \"$T_OWNER\", which is not a superuser"
hint=$(psql -X -q -U postgres -d "$DB" -c "CREATE EXTENSION kizunasync" 2>&1 | sed -n 's/^HINT:  //p')
check "the hint says to drop the schema first" "$hint" \
	"Drop the schema (DROP SCHEMA kizunasync), then run CREATE EXTENSION kizunasync again."
check "nothing of the extension is left behind" "$(leftovers)" "0 extension, 0 objects in the schema"
check "the schema is still the owner's, unchanged" \
	"$(q "$DB" -c "SELECT nspowner::regrole || ' ' || coalesce(nspacl::text, 'default') FROM pg_namespace WHERE nspname = 'kizunasync'")" \
	"$T_OWNER default"
check "the owner drops its schema" "$(sqlstate "$DB" "$T_OWNER" "DROP SCHEMA kizunasync")" "00000"
check "CREATE EXTENSION then succeeds" "$(sqlstate "$DB" postgres "SET client_min_messages = warning; CREATE EXTENSION kizunasync")" "00000"
check "and the schema belongs to the superuser that created it" \
	"$(q "$DB" -c "SELECT n.nspowner::regrole::text || ' ' || (n.nspowner = e.extowner) FROM pg_namespace n, pg_extension e WHERE n.nspname = 'kizunasync' AND e.extname = 'kizunasync'")" \
	"postgres true"
check "the database owner may use the install (configure() in its own session)" \
	"$(sqlstate "$DB" "$T_OWNER" "SELECT kizunasync.configure()")" "00000"
check "the database owner may not create objects in the extension's schema (42501)" \
	"$(sqlstate "$DB" "$T_OWNER" "CREATE TABLE kizunasync.planted (x int)" | cut -c1-5)" "42501"

# ---------------------------------------------------------------- DROP EXTENSION, CREATE EXTENSION
check "DROP EXTENSION leaves the schema behind (it was not the extension's)" \
	"$(q "$DB" -c "SET client_min_messages = warning; DROP EXTENSION kizunasync" -c "SELECT count(*) FROM pg_namespace WHERE nspname = 'kizunasync'")" "1"
check "CREATE EXTENSION into the schema left behind succeeds" \
	"$(sqlstate "$DB" postgres "SET client_min_messages = warning; CREATE EXTENSION kizunasync")" "00000"

# ---------------------------------------------------------------- CREATE for others, stray objects
q "$DB" -c "SET client_min_messages = warning; DROP EXTENSION kizunasync; GRANT CREATE ON SCHEMA kizunasync TO $T_OWNER" >/dev/null
got=$(sqlstate "$DB" postgres "CREATE EXTENSION kizunasync")
check "a superuser's schema where the database owner may CREATE is refused (42P06, naming it)" "$got" \
	"42P06 schema \"kizunasync\" already exists and roles that are not superusers may create objects in it: $T_OWNER"
check "nothing of the extension is left behind" "$(leftovers)" "0 extension, 0 objects in the schema"
q "$DB" -c "REVOKE CREATE ON SCHEMA kizunasync FROM $T_OWNER; CREATE TABLE kizunasync.stray (x int)" >/dev/null
got=$(sqlstate "$DB" postgres "CREATE EXTENSION kizunasync")
check "a schema holding an object the extension did not create is refused (42P06)" "$got" \
	"42P06 schema \"kizunasync\" already exists and is not empty"
check "nothing of the extension is left behind (the stray table stays)" "$(leftovers)" "0 extension, 1 objects in the schema"

finish
