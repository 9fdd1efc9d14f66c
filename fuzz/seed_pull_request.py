#!/usr/bin/env python3
"""fuzz/seed_pull_request.py CORPUS_DIR OUT_DIR: write the buckets argument of every pull request of the golden corpus as a
fuzz seed (deduplicated), plus a few hand-made edge inputs."""
import glob, json, os, sys
corpus, out = sys.argv[1], sys.argv[2]
seen = set()
for f in sorted(glob.glob(os.path.join(corpus, 'transcripts', '*', '*.json'))):
    for s in json.load(open(f))['steps']:
        if (s.get('rpc') == 'pull' or s.get('target') == 'pull') and 'request' in s:
            seen.add(json.dumps(s['request']['buckets'], sort_keys=True))
seen.update([
    '[]', '[{"table": "t"}]', '[{"table": "t", "params": {"a": null, "b": true, "c": 7}}]',
    '[{"table": "t", "params": {"a": "x", "a": "y"}}]', '[[[[]]]]', '{"table": "t"}',
])
# the bucket entry limit (the max_pull_buckets default, 1,000) and one past it,
# and the pack's 64 and 65 (the target parses with both limits)
for n in (64, 65, 1000, 1001):
    seen.add(json.dumps([{'table': 't', 'params': {'list_id': i}} for i in range(n)]))
for n, text in enumerate(sorted(seen), 1):
    with open(os.path.join(out, 'seed%03d.json' % n), 'w') as o:
        o.write(text)
print('%d seeds' % len(seen))
