#!/usr/bin/env python3
"""Check the layout rules of src/ (issue 13; the README's "Layout" section).

    python3 scripts/check_layout.py [--src DIR] [--graph]
    python3 scripts/check_layout.py --self-test

Reads the C files of src/ as text (no compiler) and prints one TAP-style line
per rule, "ok N - rule" or "not ok N - rule" followed by "#" lines naming each
offending file, line and reason; exits 1 when a rule fails.  The rules:

 1. Dependencies point one way.  The nodes of the graph are concerns: x.c and
    x.h are one node "x" (a header's includes count for its .c file's
    concern).  An edge x -> y is an `#include "y.h"` in x.c or x.h, for a y.h
    that exists in src/.  The graph must have no cycle; a shared helper lives
    in a file below every file that uses it.
 2. No .c file has more than MAX_FILE_LINES lines.
 3. No function body has more than MAX_FUNCTION_LINES lines (from its opening
    brace to its closing brace) unless a comment says why it must stay whole:
    the words "Kept whole:" followed by the reason, in the comment directly
    above the function or anywhere inside it.
 4. No header includes postgres.h (or postgres_fe.h); a .c file that includes
    postgres.h includes it before any other header.
 5. One header per file: every function a .c file exports (a definition that
    is not static, other than SQL-callable functions named in
    PG_FUNCTION_INFO_V1 and _PG_init) is declared in the file's own header,
    and every function a header x.h declares is defined in x.c.

--graph prints the concern graph (each node with the nodes it includes,
lowest layers first).  --self-test builds small trees that break each rule
in a temporary directory and checks that each is caught (and that a clean
tree passes), so the checker itself is shown to be able to fail.

Python 3 standard library only.  Used by the CI lane test/lanes/layout.sh.
"""

import argparse
import os
import re
import sys
import tempfile

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150
WHOLE_MARKER = 'Kept whole:'

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
# A function definition in PostgreSQL style: the name at column 0, its
# parameter list, the body's braces alone at column 0.
FUNC_NAME_RE = re.compile(r'^([A-Za-z_]\w*)\s*\(')
PG_FUNCINFO_RE = re.compile(r'PG_FUNCTION_INFO_V1\s*\(\s*(\w+)\s*\)')
EXTERN_FUNC_RE = re.compile(r'\bextern\b[^;()]*?\b([A-Za-z_]\w*)\s*\(', re.S)


class Source:
    """One file of src/: its lines with comments and strings blanked out."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.stem, self.ext = os.path.splitext(self.name)
        with open(path, encoding='utf-8', errors='replace') as f:
            self.text = f.read()
        self.lines = self.text.split('\n')
        if self.lines and self.lines[-1] == '':
            self.lines.pop()
        self.code = strip_comments(self.text).split('\n')

    def includes(self):
        """(line number, quote kind, name) of every #include."""
        out = []
        for i, ln in enumerate(self.code, 1):
            m = INCLUDE_RE.match(ln)
            if m:
                out.append((i, m.group(1), m.group(2)))
        return out


def strip_comments(text):
    """The text with comments and string/char literals replaced by blanks,
    line breaks kept (so line numbers and column-0 braces stay put).  The
    quotes of an #include "x.h" are kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            line_start = text.rfind('\n', 0, i) + 1
            if c == '"' and re.match(r'\s*#\s*include\s*$', text[line_start:i]):
                j = text.find('"', i + 1)
                j = n if j < 0 else j + 1
                out.append(text[i:j])
                i = j
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def functions(src):
    """Function definitions of a C file: (name, static, first line of the
    definition, line of '{', line of '}') with 1-based line numbers."""
    out = []
    code = src.code
    i = 0
    while i < len(code):
        if code[i].rstrip() == '{':
            # the header: lines back to the end of the previous declaration
            j = i - 1
            while j >= 0 and code[j].strip() != '' and not code[j].rstrip().endswith((';', '}')) \
                    and not code[j].lstrip().startswith('#'):
                j -= 1
            header = code[j + 1:i]
            name = None
            for k, ln in enumerate(header):
                m = FUNC_NAME_RE.match(ln)
                if m:
                    name = m.group(1)
                    break
            end = i + 1
            while end < len(code) and not code[end].startswith('}'):
                end += 1
            if name is not None and '(' in ''.join(header):
                static = any(re.search(r'\bstatic\b', ln) for ln in header)
                out.append((name, static, j + 2, i + 1, end + 1))
            i = end + 1
            continue
        i += 1
    return out


def comment_above(src, first_line):
    """The comment block directly above line first_line (1-based)."""
    k = first_line - 2
    block = []
    while k >= 0 and src.lines[k].strip() == '':
        k -= 1
    if k >= 0 and src.lines[k].rstrip().endswith('*/'):
        while k >= 0:
            block.append(src.lines[k])
            if src.lines[k].lstrip().startswith('/*'):
                break
            k -= 1
    return '\n'.join(reversed(block))


def has_whole_marker(text):
    m = re.search(re.escape(WHOLE_MARKER) + r'\s*(.*)', text)
    return bool(m) and len(re.findall(r'\w+', m.group(1))) >= 3


def load(srcdir):
    files = {}
    for name in sorted(os.listdir(srcdir)):
        if name.endswith(('.c', '.h')):
            files[name] = Source(os.path.join(srcdir, name))
    return files


def graph(files):
    """Concern graph: {node: {dep: [(file, line), ...]}}."""
    headers = {f.stem for f in files.values() if f.ext == '.h'}
    g = {f.stem: {} for f in files.values()}
    for f in files.values():
        for line, kind, inc in f.includes():
            stem, ext = os.path.splitext(os.path.basename(inc))
            if kind != '"' or ext != '.h' or stem not in headers or '/' in inc:
                continue
            if stem == f.stem:
                continue
            g[f.stem].setdefault(stem, []).append((f.name, line))
    return g


def cycles(g):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def one_cycle(g, comp):
    """A shortest cycle through the first node of a component, as a path."""
    start = comp[0]
    members = set(comp)
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(g[v]):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path.reverse()
                return path + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [start]


def layers(g):
    """Nodes by layer: 0 includes nothing of src/, n includes layer < n."""
    level = {}

    def depth(v, seen):
        if v in level:
            return level[v]
        if v in seen:
            return 0
        seen.add(v)
        d = 0 if not g[v] else 1 + max(depth(w, seen) for w in g[v])
        level[v] = d
        return d

    for v in g:
        depth(v, set())
    return level


def check(srcdir):
    """Run every rule; returns a list of (rule, [problem, ...])."""
    files = load(srcdir)
    results = []

    # 1. cycles
    g = graph(files)
    probs = []
    for comp in cycles(g):
        path = one_cycle(g, comp)
        steps = []
        for a, b in zip(path, path[1:]):
            where = ', '.join('%s:%d' % w for w in g[a][b])
            steps.append('%s -> %s (%s)' % (a, b, where))
        probs.append('include cycle among {%s}: %s' % (', '.join(comp), '; '.join(steps)))
    results.append(('the include graph of src/ has no cycle (x.c and x.h are one node)', probs))

    # 2. file size
    probs = ['%s has %d lines (at most %d)' % (f.name, len(f.lines), MAX_FILE_LINES)
             for f in files.values() if f.ext == '.c' and len(f.lines) > MAX_FILE_LINES]
    results.append(('no .c file has more than %d lines' % MAX_FILE_LINES, probs))

    # 3. function size
    probs = []
    for f in files.values():
        if f.ext != '.c':
            continue
        for name, _static, first, lbrace, rbrace in functions(f):
            n = rbrace - lbrace + 1
            if n <= MAX_FUNCTION_LINES:
                continue
            body = '\n'.join(f.lines[lbrace - 1:rbrace])
            if has_whole_marker(comment_above(f, first)) or has_whole_marker(body):
                continue
            probs.append('%s:%d: %s() is %d lines (at most %d without a "%s <reason>" comment)'
                         % (f.name, first, name, n, MAX_FUNCTION_LINES, WHOLE_MARKER))
    results.append(('no function has more than %d lines unless a comment says why it stays whole'
                    % MAX_FUNCTION_LINES, probs))

    # 4. postgres.h
    probs = []
    for f in files.values():
        incs = f.includes()
        pg = [(ln, inc) for ln, _k, inc in incs if inc in ('postgres.h', 'postgres_fe.h')]
        if f.ext == '.h':
            probs += ['%s:%d: a header includes %s' % (f.name, ln, inc) for ln, inc in pg]
        elif pg and incs[0][2] != pg[0][1]:
            probs.append('%s:%d: postgres.h is not the first include (%s comes first)'
                         % (f.name, pg[0][0], incs[0][2]))
    results.append(('no header includes postgres.h; a .c file includes it first', probs))

    # 5. one header per file
    probs = []
    defined = {}
    for f in files.values():
        if f.ext != '.c':
            continue
        sql = set(PG_FUNCINFO_RE.findall(f.text)) | {'_PG_init'}
        header = files.get(f.stem + '.h')
        declared = set(EXTERN_FUNC_RE.findall('\n'.join(header.code))) if header else set()
        defined[f.stem] = set()
        for name, static, first, _lb, _rb in functions(f):
            defined[f.stem].add(name)
            if static or name in sql:
                continue
            if header is None:
                probs.append('%s:%d: %s() is exported but %s has no header %s.h'
                             % (f.name, first, name, f.name, f.stem))
            elif name not in declared:
                probs.append('%s:%d: %s() is exported but not declared in %s.h'
                             % (f.name, first, name, f.stem))
    for f in files.values():
        if f.ext != '.h':
            continue
        for name in sorted(set(EXTERN_FUNC_RE.findall('\n'.join(f.code)))):
            if name not in defined.get(f.stem, set()):
                probs.append('%s: declares %s(), which %s.c does not define'
                             % (f.name, name, f.stem))
    results.append(('every exported function is declared in its own file\'s header', probs))
    return results, g


def report(results):
    failed = 0
    for n, (rule, probs) in enumerate(results, 1):
        if probs:
            failed += 1
            print('not ok %d - %s' % (n, rule))
            for p in probs:
                print('#   ' + p)
        else:
            print('ok %d - %s' % (n, rule))
    print('1..%d' % len(results))
    return failed


def print_graph(g):
    level = layers(g)
    for v in sorted(g, key=lambda v: (level[v], v)):
        print('%2d %-16s -> %s' % (level[v], v, ' '.join(sorted(g[v])) or '-'))


# ------------------------------------------------------------------ self-test

CLEAN = {
    'base.h': '#ifndef BASE_H\n#define BASE_H\nextern int base_one(void);\n#endif\n',
    'base.c': '#include "postgres.h"\n\n#include "base.h"\n\n'
              'int\nbase_one(void)\n{\n\treturn 1;\n}\n',
    'top.h': '#ifndef TOP_H\n#define TOP_H\nextern int top_two(void);\n#endif\n',
    'top.c': '#include "postgres.h"\n\n#include "fmgr.h"\n\n#include "base.h"\n#include "top.h"\n\n'
             'PG_FUNCTION_INFO_V1(top_sql);\n\n'
             'static int\ntop_helper(void)\n{\n\treturn 1;\n}\n\n'
             'int\ntop_two(void)\n{\n\treturn base_one() + top_helper();\n}\n\n'
             'Datum\ntop_sql(PG_FUNCTION_ARGS)\n{\n\tPG_RETURN_INT32(top_two());\n}\n',
}


def long_function(name, n, comment=''):
    return ('%sstatic int\n%s(void)\n{\n\tint\t\t\tx = 0;\n\n' % (comment, name)
            + '\tx++;\n' * n + '\treturn x;\n}\n')


def self_test():
    cases = [
        ('a clean tree passes', {}, None),
        ('a cycle through a header is caught', {
            'base.h': CLEAN['base.h'].replace('#define BASE_H\n', '#define BASE_H\n#include "top.h"\n')},
         1),
        ('a cycle through a .c file is caught', {
            'base.c': CLEAN['base.c'].replace('#include "base.h"\n', '#include "base.h"\n#include "top.h"\n')},
         1),
        ('a .c file above %d lines is caught' % MAX_FILE_LINES, {
            'base.c': CLEAN['base.c'] + '\n' * MAX_FILE_LINES}, 2),
        ('a function above %d lines is caught' % MAX_FUNCTION_LINES, {
            'base.c': CLEAN['base.c'] + '\n' + long_function('base_long', MAX_FUNCTION_LINES)}, 3),
        ('a long function with a "%s" comment passes' % WHOLE_MARKER, {
            'base.c': CLEAN['base.c'] + '\n' + long_function(
                'base_long', MAX_FUNCTION_LINES,
                '/*\n * Kept whole: the steps share one fence and read as the protocol.\n */\n')},
         None),
        ('a "%s" marker without a reason is caught' % WHOLE_MARKER, {
            'base.c': CLEAN['base.c'] + '\n' + long_function(
                'base_long', MAX_FUNCTION_LINES, '/* Kept whole: */\n')}, 3),
        ('a header including postgres.h is caught', {
            'base.h': CLEAN['base.h'].replace('#define BASE_H\n', '#define BASE_H\n#include "postgres.h"\n')},
         4),
        ('postgres.h after another header is caught', {
            'base.c': CLEAN['base.c'].replace('#include "postgres.h"\n\n#include "base.h"\n',
                                              '#include "base.h"\n#include "postgres.h"\n')}, 4),
        ('an exported function of a file without a header is caught', {
            'lone.c': '#include "postgres.h"\n\nint\nlone_export(void)\n{\n\treturn 0;\n}\n'}, 5),
        ('an exported function missing from its own header is caught', {
            'top.c': CLEAN['top.c'].replace('static int\ntop_helper', 'int\ntop_helper')}, 5),
        ('a function declared in another file\'s header is caught', {
            'top.h': CLEAN['top.h'].replace('extern int top_two(void);\n',
                                            'extern int top_two(void);\nextern int base_three(void);\n')},
         5),
    ]
    failed = 0
    for n, (title, change, rule) in enumerate(cases, 1):
        with tempfile.TemporaryDirectory() as d:
            tree = dict(CLEAN)
            tree.update(change)
            for name, text in tree.items():
                with open(os.path.join(d, name), 'w') as f:
                    f.write(text)
            results, _g = check(d)
            bad = [i + 1 for i, (_r, p) in enumerate(results) if p]
            want = [] if rule is None else [rule]
            if bad == want:
                print('ok %d - self-test: %s' % (n, title))
            else:
                failed += 1
                print('not ok %d - self-test: %s (rules failing: %s, wanted: %s)'
                      % (n, title, bad or 'none', want or 'none'))
                for i in bad:
                    for p in results[i - 1][1]:
                        print('#   ' + p)
    print('1..%d' % len(cases))
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--src', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src'))
    ap.add_argument('--graph', action='store_true', help='print the concern graph by layer')
    ap.add_argument('--self-test', action='store_true', help='check that each rule can fail')
    args = ap.parse_args()
    if args.self_test:
        return 1 if self_test() else 0
    results, g = check(args.src)
    if args.graph:
        print_graph(g)
    return 1 if report(results) else 0


if __name__ == '__main__':
    sys.exit(main())
