#!/usr/bin/env bash
# shellcheck disable=SC2016  # SQL in single quotes is meant literally
# Issue 23 items 6 and 8.
#   a. (item 6) arrayUnion/arrayRemove on a column whose type is an array of
#      a composite type apply (they failed the whole push with 42846); on an
#      array whose elements cannot be compared (json[]) and with a value the
#      element type refuses they are a CONSTRAINT verdict for that mutation:
#      the other mutations of a non-atomic batch are applied, an atomic
#      batch answers {"batch": ...}, never an error of the call;
#   b. (item 8, decisions/0088) the capture's no-op guard compares what a
#      pull would deliver, not jsonb equality: a direct UPDATE that rewrites
#      a json value 1 as 1.0 (equal as jsonb) is a change, so a device that
#      syncs deltas holds the same bytes as one that bootstraps afterwards;
#      an UPDATE that rewrites the same bytes is none.
# Operational steps run as the non-superuser database owner, clients in the
# Data API shape.
T_NAME=mutation_edges
. "$(dirname "$0")/lib.sh"

T_OWNER=${KZ_T_OWNER:-kz_t_me_owner}
DB=kz_t_me
owner_role "$T_OWNER" || bail "cannot create role $T_OWNER"
owned_appdb "$DB" "$T_OWNER" || bail "cannot create database $DB"
mid() { printf '00000000-0000-4000-8000-f%011d' "$1"; }

# request SUB CALL (lib.sh): one Data API request against $DB
# pushb SUB ATOMIC MUTATIONS
pushb() { request "$1" "kizunasync.push(batch => '{\"atomic\": $2, \"mutations\": [$3]}'::jsonb, last_mutation_id => NULL, schema_version => 1)"; }
jq_() { case $1 in ERROR*|'') echo "${1:-no response}"; return ;; esac; printf '%s\n' "WITH s AS (SELECT :'j'::jsonb AS j) SELECT $2 FROM s;" | q "$DB" -v j="$1" 2>&1; }
verdicts() { jq_ "$1" "coalesce((SELECT string_agg(coalesce(v ->> 'reason', v ->> 'verdict'), ' ') FROM jsonb_array_elements(j -> 'verdicts') v), 'batch:' || (j -> 'batch')::text)"; }
row() { q "$DB" -c "SELECT pts::text || ' n=' || coalesce(n::text, '-') FROM public.shapes WHERE id = $1"; }
upd() {	# upd MID PK TRANSFORMS [COLUMNS]
	echo "{\"mutation_id\": \"$(mid "$1")\", \"table\": \"shapes\", \"pk\": \"$2\", \"op\": \"update\", \"columns\": ${4:-{\}}, \"transforms\": $3}"
}

qo "$DB" > "$T_OUT/setup.out" 2>&1 <<SQL
CREATE TYPE public.pt AS (x integer, y text);
CREATE TABLE public.shapes (id bigint PRIMARY KEY, owner_id uuid NOT NULL, pts public.pt[], docs json[], n integer);
ALTER TABLE public.shapes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.shapes FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.shapes TO authenticated;
GRANT USAGE ON TYPE public.pt TO authenticated;
INSERT INTO public.shapes VALUES (1, '$UA', '{"(1,a)"}', '{"{\\"k\\": 1}"}', 0), (2, '$UA', NULL, NULL, 0);
SELECT kizunasync.sync_table('public.shapes', bucket_column => 'owner_id');
CREATE TABLE public.docs (id bigint PRIMARY KEY, owner_id uuid NOT NULL, body json, tags text[]);
ALTER TABLE public.docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.docs FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.docs TO authenticated;
INSERT INTO public.docs VALUES (1, '$UA', '{"v": 1}', '{a}');
SELECT kizunasync.sync_table('public.docs', bucket_column => 'owner_id');
SQL
check "setup: the owner creates a composite type and two synced tables" "$?:$(grep -c ERROR "$T_OUT/setup.out")" "0:0"

# ------------------------------------------------------------------ a. composite arrays
r=$(pushb "$UA" false "$(upd 1 1 '{"pts": {"op": "arrayUnion", "values": ["(2,b)", "(1,a)", "(3,\"c d\")"]}}'),
	$(upd 2 1 '{}' '{"n": 5}')")
check "a: arrayUnion on a composite array applies beside another mutation (verdicts)" "$(verdicts "$r")" "applied applied"
check "a: ... the union keeps existing elements first, each once" "$(row 1)" '{"(1,a)","(2,b)","(3,\"c d\")"} n=5'
check "a: ... its verdict carries the server row" "$(jq_ "$r" "j -> 'verdicts' -> 0 -> 'server_row' -> 'pts'")" '[{"x": 1, "y": "a"}, {"x": 2, "y": "b"}, {"x": 3, "y": "c d"}]'
r=$(pushb "$UA" false "$(upd 3 1 '{"pts": {"op": "arrayRemove", "values": ["(1,a)", "(9,z)"]}}'),
	$(upd 4 2 '{"pts": {"op": "arrayUnion", "values": ["(4,d)"]}}')")
check "a: arrayRemove on a composite array, arrayUnion onto NULL" "$(verdicts "$r") | $(row 1) | $(row 2)" \
	'applied applied | {"(2,b)","(3,\"c d\")"} n=5 | {"(4,d)"} n=0'
r=$(pushb "$UA" false "$(upd 5 1 '{"pts": {"op": "arrayUnion", "values": ["not a point"]}}'),
	$(upd 6 1 '{"docs": {"op": "arrayUnion", "values": ["{}"]}}'),
	$(upd 7 1 '{"docs": {"op": "arrayRemove", "values": ["{\"k\": 1}"]}}'),
	$(upd 8 1 '{}' '{"n": 6}')")
check "a: a value the element type refuses, and arrayUnion/arrayRemove on json[] (no equality): CONSTRAINT verdicts, the batch's other mutation applies" \
	"$(verdicts "$r") | $(row 1)" 'CONSTRAINT CONSTRAINT CONSTRAINT applied | {"(2,b)","(3,\"c d\")"} n=6'
r=$(pushb "$UA" true "$(upd 9 1 '{}' '{"n": 7}'),
	$(upd 10 1 '{"docs": {"op": "arrayUnion", "values": ["{}"]}}')")
check "a: in an atomic batch the inapplicable transform aborts the batch (an answer, not an error); nothing applied" \
	"$(jq_ "$r" "(j -> 'batch' ->> 'reason') || ' ' || (j -> 'batch' ->> 'offender_mutation_id')") | $(row 1)" \
	"CONSTRAINT $(mid 10) | {\"(2,b)\",\"(3,\\\"c d\\\")\"} n=6"
r=$(pushb "$UA" false "$(upd 5 1 '{"pts": {"op": "arrayUnion", "values": ["not a point"]}}')")
check "a: a retry of the rejected mutation replays its verdict" "$(verdicts "$r")" "CONSTRAINT"

# ------------------------------------------------------------------ b. the no-op guard
BD="[{\"table\": \"docs\", \"params\": {\"owner_id\": \"$UA\"}}]"
sync() { sync_device "$1" "$UA" "$BD" | q "$DB" > "$T_OUT/sync.$1.out" 2>&1; }
seq_of() { q "$DB" -c "SELECT seq FROM kizunasync.changelog WHERE table_name = 'docs' AND pk = '1'"; }
sync D1
s0=$(seq_of)
qo "$DB" -c "UPDATE public.docs SET body = '{\"v\": 1}', tags = '{a}' WHERE id = 1" >/dev/null 2>&1
check "b: an UPDATE that rewrites the same bytes is no change (the entry keeps its seq)" "$(seq_of)" "$s0"
qo "$DB" -c "UPDATE public.docs SET body = '{\"v\": 1.0}' WHERE id = 1" >/dev/null 2>&1
check_true "b: an UPDATE that rewrites json 1 as 1.0 (equal as jsonb, rendered differently) is a change (decisions/0088)" \
	test "$(seq_of)" -gt "$s0"
sync D1
check "b: the device that syncs deltas receives the new rendering" \
	"$(q "$DB" -c "SELECT row -> 'body' FROM kzt.replica WHERE device = 'D1' AND tbl = 'docs' AND pk = '1'")" '{"v": 1.0}'
sync D2
q "$DB" -c "$(replica_text D1 docs)" > "$T_OUT/D1.rows"
q "$DB" -c "$(replica_text D2 docs)" > "$T_OUT/D2.rows"
check_same "b: it holds the same bytes as a device that bootstraps afterwards" "$T_OUT/D1.rows" "$T_OUT/D2.rows"

finish
