#!/usr/bin/env python3
"""Seed the fuzz_cursor corpus: fuzz/seed_cursor.py CORPUS_DIR OUT_DIR

Writes one file per token of CORPUS_DIR/spec/cursor-token-vectors.json (both
lists) into OUT_DIR, plus a few synthetic tokens at the limits.  Without the
golden corpus it says so and writes only the synthetic seeds.
"""
import json
import os
import sys


def synthetic():
    top = 9223372036854775807
    yield "0"
    yield "9223372036854775807"
    yield "9223372036854775808"
    # 512 holes (the limit) and 513
    yield "1000~" + ".".join(str(i) for i in range(1, 513))
    yield "1000~" + ".".join(str(i) for i in range(1, 514))
    # the longest valid token, and one byte past it
    longest = "%d:%d~%s" % (top, top, ".".join(str(top - i) for i in range(512, 0, -1)))
    yield longest
    yield longest + "0"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: seed_cursor.py CORPUS_DIR OUT_DIR")
    corpus, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    tokens = list(synthetic())
    path = os.path.join(corpus, "spec", "cursor-token-vectors.json")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            v = json.load(f)
        tokens += v["accept"] + v["reject"]
        print("seed_cursor: %d vector tokens from %s" % (len(v["accept"]) + len(v["reject"]), path))
    else:
        print("seed_cursor: no golden corpus at %s; seeding synthetic tokens only" % corpus)
    for i, t in enumerate(tokens):
        with open(os.path.join(out, "seed-%03d" % i), "wb") as f:
            f.write(t.encode("utf-8"))
    print("seed_cursor: %d seeds in %s" % (len(tokens), out))


if __name__ == "__main__":
    main()
