#!/usr/bin/env python3
"""Seed the hlc fuzzer: pairs of hybrid logical clock strings from the
golden corpus (every JSON string value that looks like a clock), each seed
"<a>\\0<b>" (the target splits its input at the first NUL).

Usage: seed_hlc.py CORPUS_DIR OUT_DIR (called by fuzz/run.sh)."""
import glob, json, os, re, sys
corpus, out = sys.argv[1], sys.argv[2]
clock = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\|')
found = set()


def walk(v):
    if isinstance(v, str) and clock.match(v):
        found.add(v)
    elif isinstance(v, dict):
        for x in v.values():
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)


for f in sorted(glob.glob(os.path.join(corpus, '**', '*.json'), recursive=True)):
    try:
        walk(json.load(open(f)))
    except (ValueError, OSError):
        pass
clocks = sorted(found) or ['2026-01-01T00:00:00.000Z|0|node']
n = 0
for i, a in enumerate(clocks[:64]):
    b = clocks[(i + 1) % len(clocks)]
    n += 1
    with open(os.path.join(out, 'seed%03d' % n), 'wb') as o:
        o.write(a.encode() + b'\0' + b.encode())
print('seed_hlc: %d seeds from %d clocks' % (n, len(found)))
