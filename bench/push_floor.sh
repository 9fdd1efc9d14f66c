#!/usr/bin/env bash
# push_floor: 1,000 mutations (500 inserts, then 500 single-column updates)
# pushed in batches of 100 as an authenticated user, vs the floor: the same
# writes as plain SQL statements under the same RLS (one statement per write,
# same role and claims, one transaction per 100 writes).  Prints both timings
# and the median ratio over ROUNDS (default 5) alternating rounds, measured
# side by side in one run.  Runnable by hand:
#   eval "$(bash scripts/devenv.sh NAME PORT)"; eval "$(bash scripts/cluster.sh env)"
#   bash bench/push_floor.sh [dbname]
set -euo pipefail
DB=${1:-kz_bench_push}
dropdb --if-exists "$DB" 2>/dev/null; createdb "$DB"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -f "$ROOT/test/setup/standins.sql" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION kizunasync;
CREATE TABLE public.todos (id uuid PRIMARY KEY, owner_id uuid NOT NULL, title text, done boolean);
ALTER TABLE public.todos ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.todos FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.todos TO authenticated;
SELECT kizunasync.sync_table('public.todos', bucket_column => 'owner_id');
SQL
U=00000000-0000-4000-8000-a10000000001
gen() {	# $1 = push|sql, $2 = id prefix
	python3 - "$1" "$2" "$U" <<'PY'
import json, sys
mode, pre, u = sys.argv[1:]
ids = ['%s-0000-4000-8000-%012d' % (pre, i) for i in range(500)]
muts = [dict(mutation_id='%s-0000-4000-9000-%012d' % (pre, i), table='todos', pk=ids[i], op='insert',
             columns=dict(owner_id=u, title='t%d' % i, done=False)) for i in range(500)]
muts += [dict(mutation_id='%s-0000-4000-9000-%012d' % (pre, 500 + i), table='todos', pk=ids[i], op='update',
              columns=dict(title='u%d' % i)) for i in range(500)]
claims = "SELECT set_config('request.jwt.claims', '{\"sub\": \"%s\", \"role\": \"authenticated\"}', true);" % u
for b in range(10):
    chunk = muts[b * 100:(b + 1) * 100]
    print('BEGIN;'); print(claims); print('SET LOCAL ROLE authenticated;')
    if mode == 'push':
        batch = json.dumps(dict(atomic=False, mutations=chunk)).replace("'", "''")
        print("SELECT kizunasync.push('%s', NULL, 1) IS NOT NULL;" % batch)
    else:
        for m in chunk:
            c = m['columns']
            if m['op'] == 'insert':
                print("INSERT INTO public.todos (id, owner_id, title, done) VALUES ('%s', '%s', '%s', false);" % (m['pk'], c['owner_id'], c['title']))
            else:
                print("UPDATE public.todos SET title = '%s' WHERE id = '%s';" % (c['title'], m['pk']))
    print('COMMIT;')
PY
}
run() { local t0 t1; t0=$(date +%s%N); psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -f "$1" >/dev/null; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
reset() { psql -X -q -d "$DB" -c "DELETE FROM public.todos; DELETE FROM kizunasync.verdicts" >/dev/null; }
# warm-up of both paths, then ROUNDS measured rounds, alternating which goes first
ROUNDS=${ROUNDS:-5}
gen push aaaaaaa0 > /tmp/kz_bench_push.sql; gen sql bbbbbbb0 > /tmp/kz_bench_sql.sql
run /tmp/kz_bench_push.sql >/dev/null; reset; run /tmp/kz_bench_sql.sql >/dev/null; reset
ps=(); ss=()
for r in $(seq 1 "$ROUNDS"); do
	gen push aaaaaaa$r > /tmp/kz_bench_push.sql; gen sql bbbbbbb$r > /tmp/kz_bench_sql.sql
	if [ $((r % 2)) -eq 1 ]; then
		p=$(run /tmp/kz_bench_push.sql); rows=$(psql -X -At -d "$DB" -c "SELECT count(*) FROM public.todos WHERE title LIKE 'u%'"); reset
		s=$(run /tmp/kz_bench_sql.sql); reset
	else
		s=$(run /tmp/kz_bench_sql.sql); reset
		p=$(run /tmp/kz_bench_push.sql); rows=$(psql -X -At -d "$DB" -c "SELECT count(*) FROM public.todos WHERE title LIKE 'u%'"); reset
	fi
	[ "$rows" = 500 ] || { echo "push round $r left $rows updated rows, expected 500" >&2; exit 1; }
	echo "round $r: push ${p} ms, plain SQL ${s} ms"
	ps+=("$p"); ss+=("$s")
done
python3 - "${ps[*]}" "${ss[*]}" <<'PY'
import statistics, sys
p = [int(x) for x in sys.argv[1].split()]; s = [int(x) for x in sys.argv[2].split()]
mp, ms = statistics.median(p), statistics.median(s)
print('push (10 batches x 100, median):     %d ms' % mp)
print('plain SQL (1000 statements, median): %d ms' % ms)
print('ratio push/floor: %.2f (target <= 2.0)' % (mp / max(ms, 1)))
PY
dropdb "$DB"
