"""Reading callgrind output files (the format of valgrind --tool=callgrind,
one event, "positions: line"): per function its self cost, and per call
edge (caller, callee) the inclusive cost of those calls.  Functions are
named "name" (or "name@object" where one name occurs in two objects).
Used by bench/write_profile; standard library only."""
import collections
import re

_NAMED = re.compile(r"^\((\d+)\)(?: (.*))?$")


class Profile:
    def __init__(self, path):
        self.self_cost = collections.Counter()
        self.edges = collections.Counter()        # (caller, callee) -> inclusive
        self.calls = collections.Counter()        # (caller, callee) -> count
        self.obj = {}                             # function -> object path
        self.total = 0
        names = {"ob": {}, "fn": {}, "fl": {}}
        ob = fn = cob = cfn = None
        pending_call = None
        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line or line[0] == "#":
                    continue
                if pending_call is not None:
                    parts = line.split()
                    cost = int(parts[-1]) if len(parts) >= 2 else 0
                    self.edges[(fn, pending_call)] += cost
                    pending_call = None
                    continue
                key, sep, val = line.partition("=")
                if sep and key in ("ob", "cob", "fn", "cfn", "cfl", "cfi", "fl", "fi", "fe", "calls"):
                    if key == "calls":
                        callee = cfn
                        self.calls[(fn, callee)] += int(val.split()[0])
                        pending_call = callee
                        continue
                    kind = {"ob": "ob", "cob": "ob", "fn": "fn", "cfn": "fn"}.get(key, "fl")
                    m = _NAMED.match(val)
                    if m:
                        ident, name = m.group(1), m.group(2)
                        if name is not None:
                            names[kind][ident] = name
                        name = names[kind].get(ident, ident)
                    else:
                        name = val
                    if key == "ob":
                        ob = name
                        cob = None
                    elif key == "cob":
                        cob = name
                    elif key == "fn":
                        fn = name
                        self.obj[fn] = ob
                        cob = None
                    elif key == "cfn":
                        cfn = name
                        self.obj.setdefault(cfn, cob if cob is not None else ob)
                    continue
                if line.startswith(("summary:", "totals:")):
                    self.total = int(line.split()[1])
                    continue
                if ":" in line.split()[0]:
                    continue            # header lines (version:, events:, ...)
                parts = line.split()
                if len(parts) >= 2 and fn is not None:
                    self.self_cost[fn] += int(parts[-1])
        self._incl = None

    def inclusive(self, fn):
        """Self cost plus the calls it makes (a direct recursion counted once)."""
        if self._incl is None:
            incl = collections.Counter(self.self_cost)
            for (a, b), c in self.edges.items():
                if a != b:
                    incl[a] += c
            self._incl = incl
        return self._incl.get(fn, 0)

    def edge(self, caller, callee):
        return self.edges.get((caller, callee), 0)

    def calls_into(self, callee):
        """Inclusive cost of every call of callee from another function."""
        return sum(c for (a, b), c in self.edges.items() if b == callee and a != callee)

    def in_object(self, fragment):
        return {f for f, o in self.obj.items() if o and fragment in o}
