#!/usr/bin/env bash
# PostgreSQL's own consistency checks on the bookkeeping (issue 21 item 4,
# decisions/0010): the extension writes its bookkeeping tables and their
# indexes with direct heap and index access (src/bookkeeping.c, src/stamp.c),
# so amcheck must find nothing wrong with them.
#
#   test/tools/amcheck.sh DB [SCHEMA]       (SCHEMA defaults to kizunasync)
#   test/tools/amcheck.sh --self-test
#
# As a superuser (the cluster environment's PGUSER), in DB: CREATE EXTENSION
# IF NOT EXISTS amcheck, then
#   - verify_heapam(table, on_error_stop => false, check_toast => true) on
#     every table of SCHEMA: every row it returns is corruption;
#   - bt_index_parent_check(index, heapallindexed => true) on every btree
#     index of those tables and of their TOAST tables: any error is
#     corruption (it also checks that every heap tuple has its index entry).
# One TAP-ish "ok"/"not ok" line per relation, a summary line
# "amcheck: N relations, F failed"; exits 1 on any failure, and when there
# is nothing to check (SCHEMA has no table: the check would prove nothing).
#
# --self-test is the negative control: in a scratch database it plants an
# index whose entries disagree with its heap (an expression index over a
# function declared IMMUTABLE whose result is then changed) and checks that
# the check fails on it and passes on the same index rebuilt.
set -uo pipefail

if [ "${1:-}" = --self-test ]; then
	DB=kz_amcheck_selftest
	dropdb --if-exists "$DB" >/dev/null 2>&1
	createdb "$DB" || exit 1
	psql -X -q -v ON_ERROR_STOP=1 -d "$DB" >/dev/null <<'SQL' || exit 1
CREATE SCHEMA kz_plant;
CREATE TABLE kz_plant.shift (n integer);
INSERT INTO kz_plant.shift VALUES (0);
CREATE FUNCTION kz_plant.f(integer) RETURNS integer LANGUAGE sql IMMUTABLE
	AS 'SELECT $1 + (SELECT n FROM kz_plant.shift)';
CREATE TABLE kz_plant.t (id integer PRIMARY KEY);
INSERT INTO kz_plant.t SELECT generate_series(1, 1000);
CREATE INDEX t_f_idx ON kz_plant.t (kz_plant.f(id));
UPDATE kz_plant.shift SET n = 1000000;
SQL
	rc=0 bad_rc=0
	bad=$(bash "$0" "$DB" kz_plant 2>&1) || bad_rc=$?
	if [ $bad_rc -ne 0 ] && echo "$bad" | grep -q '^not ok .*t_f_idx'; then
		echo "ok - amcheck self-test: the planted index mismatch is reported"
	else
		echo "not ok - amcheck self-test: the planted index mismatch is reported"
		while IFS= read -r l; do echo "#   $l"; done <<< "$bad"
		rc=1
	fi
	psql -X -q -d "$DB" -c 'REINDEX INDEX kz_plant.t_f_idx' >/dev/null
	if good=$(bash "$0" "$DB" kz_plant 2>&1); then
		echo "ok - amcheck self-test: the rebuilt index passes"
	else
		echo "not ok - amcheck self-test: the rebuilt index passes"
		while IFS= read -r l; do echo "#   $l"; done <<< "$good"
		rc=1
	fi
	dropdb --if-exists "$DB" >/dev/null 2>&1
	exit $rc
fi

DB=${1:?usage: amcheck.sh DB [SCHEMA] | --self-test}
SCHEMA=${2:-kizunasync}
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

if ! q -c "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS amcheck" >/dev/null; then
	echo "not ok - amcheck: CREATE EXTENSION amcheck in $DB"
	echo "amcheck: 0 relations, 1 failed"
	exit 1
fi
# the tables of SCHEMA, then the btree indexes of them and of their TOAST tables
# (oids as text: the names are printed through regclass, quoted as needed)
objs=$(q -v schema="$SCHEMA" <<'SQL'
SELECT 'heap ' || c.oid
  FROM pg_class c
 WHERE c.relnamespace = :'schema'::regnamespace AND c.relkind IN ('r', 'm')
UNION ALL
SELECT 'btree ' || i.indexrelid
  FROM pg_index i
  JOIN pg_class ic ON ic.oid = i.indexrelid
  JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'btree'
 WHERE i.indrelid IN (SELECT c.oid FROM pg_class c
                       WHERE c.relnamespace = :'schema'::regnamespace AND c.relkind IN ('r', 'm')
                      UNION ALL
                      SELECT c.reltoastrelid FROM pg_class c
                       WHERE c.relnamespace = :'schema'::regnamespace AND c.relkind IN ('r', 'm')
                         AND c.reltoastrelid <> 0)
 ORDER BY 1;
SQL
) || { echo "not ok - amcheck: list the relations of $SCHEMA in $DB"; echo "amcheck: 0 relations, 1 failed"; exit 1; }

n=0 failed=0 heaps=0 indexes=0
while read -r kind oid; do
	[ -n "$kind" ] || continue
	n=$((n + 1))
	name=$(q -c "SELECT $oid::regclass")
	if [ "$kind" = heap ]; then
		heaps=$((heaps + 1))
		out=$(q -F ' ' -c "SELECT 'block ' || blkno || ' offset ' || coalesce(offnum::text, '-') || ' attribute ' || coalesce(attnum::text, '-') || ': ' || msg
			FROM verify_heapam($oid::regclass, on_error_stop => false, check_toast => true)" 2>&1)
		rc=$?
		what="verify_heapam($name)"
	else
		indexes=$((indexes + 1))
		out=$(q -c "SELECT bt_index_parent_check($oid::regclass, heapallindexed => true)" 2>&1)
		rc=$?
		# a void result prints as an empty line
		out=$(echo "$out" | grep -v '^$')
		what="bt_index_parent_check($name, heapallindexed => true)"
	fi
	if [ $rc -eq 0 ] && [ -z "$out" ]; then
		echo "ok - $what"
	else
		echo "not ok - $what"
		echo "$out" | head -20 | sed 's/^/#   /'
		failed=$((failed + 1))
	fi
done <<< "$objs"

if [ "$heaps" -eq 0 ]; then
	echo "not ok - amcheck: schema $SCHEMA in $DB has no table to check"
	failed=$((failed + 1))
fi
echo "amcheck: $DB schema $SCHEMA: $heaps tables, $indexes btree indexes checked, $failed failed"
[ "$failed" -eq 0 ]
