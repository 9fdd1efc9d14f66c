#!/usr/bin/env python3
"""Seed the push_request fuzzer: every push batch of the golden corpus.

Usage: seed_push_request.py CORPUS_DIR OUT_DIR (called by fuzz/run.sh)."""
import glob, json, os, sys
corpus, out = sys.argv[1], sys.argv[2]
n = 0
for f in sorted(glob.glob(os.path.join(corpus, 'transcripts', '*', '*.json'))):
    for s in json.load(open(f))['steps']:
        if s.get('rpc') == 'push' or s.get('target') == 'push':
            if 'request' in s:
                n += 1
                with open(os.path.join(out, 'seed%03d.json' % n), 'w') as o:
                    json.dump(s['request']['batch'], o, sort_keys=True)
print('%d seeds' % n)
