#!/usr/bin/env python3
"""Release metadata in step with kizunasync.control (issue 31), TAP lines.

kizunasync.control is the source of truth (decisions/0080): its
default_version is the version under development, its comment the
extension's one-line description.  Checked against it:

  META.json (PGXN, meta-spec 1.0): the keys the spec requires, of the right
    form; name = the extension's name; version and provides.kizunasync.version
    = default_version; abstract = the control file's comment; the provided
    file exists; the license is one the spec knows; the PostgreSQL range
    admits every major of debian/pgversions;
  debian/changelog: source kizunasync, upstream version = default_version;
  debian/control.in: one package postgresql-PGVERSION-kizunasync whose
    Depends name ${shlibs:Depends} (jansson) and ${postgresql:Depends}
    (the server major).

  python3 scripts/check_meta.py [--root DIR]   check a tree (default: the checkout)
  python3 scripts/check_meta.py --self-test    break each rule in a scratch copy,
                                               want each caught

Exit status 1 when a check fails.  Run by scripts/check_package.sh (layout lane).
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile

# PGXN meta-spec 1.0 license shortcuts (https://pgxn.org/meta/spec.txt)
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd",
    "freebsd", "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1",
    "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5",
    "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source",
    "restricted", "unrestricted", "unknown",
}
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$")
FILES = ["kizunasync.control", "META.json", "debian/changelog",
         "debian/control.in", "debian/pgversions"]


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def control(root):
    """name, {key: value} of the extension's control file."""
    kv = {}
    for line in read(root, "kizunasync.control").splitlines():
        m = re.match(r"^\s*(\w+)\s*=\s*'(.*)'\s*$", line)
        if m:
            kv[m.group(1)] = m.group(2)
    return "kizunasync", kv


def pg_range_admits(spec, major):
    """Does a PGXN version range (">= 15.0.0, < 18.0.0", "15.0.0", 0) admit major.0.0?"""
    if spec in (0, "0"):
        return True
    v = (major, 0, 0)
    for part in str(spec).split(","):
        m = re.match(r"^\s*(==|!=|<=|>=|<|>)?\s*(\d+)\.(\d+)\.(\d+)\s*$", part)
        if not m:
            return False
        op, w = m.group(1) or ">=", tuple(int(x) for x in m.group(2, 3, 4))
        ok = {"==": v == w, "!=": v != w, "<=": v <= w, ">=": v >= w,
              "<": v < w, ">": v > w}[op]
        if not ok:
            return False
    return True


def check(root):
    """A list of (ok, description, details)."""
    out = []

    def t(ok, desc, *details):
        out.append((bool(ok), desc, [d for d in details if d]))

    name, ctl = control(root)
    version = ctl.get("default_version", "")
    t(SEMVER.match(version), "kizunasync.control's default_version is a semantic version",
      "default_version = %r" % version)

    try:
        meta = json.loads(read(root, "META.json"))
    except (OSError, ValueError) as e:
        t(False, "META.json parses", str(e))
        meta = None
    if meta is not None:
        missing = [k for k in ("name", "version", "abstract", "maintainer", "license",
                               "provides", "meta-spec") if k not in meta]
        t(not missing, "META.json has every key meta-spec 1.0 requires",
          missing and "missing: " + ", ".join(missing))
        spec = meta.get("meta-spec", {})
        t(isinstance(spec, dict) and re.match(r"^1\.0\.\d+$", str(spec.get("version", ""))),
          "META.json meta-spec version is 1.0.x", "meta-spec = %r" % (spec,))
        t(meta.get("name") == name, "META.json name is the extension's name (%s)" % name,
          "name = %r" % meta.get("name"))
        t(meta.get("version") == version,
          "META.json version = kizunasync.control's default_version (%s)" % version,
          "META.json version = %r" % meta.get("version"))
        t(meta.get("abstract") == ctl.get("comment"),
          "META.json abstract = kizunasync.control's comment",
          "abstract = %r" % meta.get("abstract"), "comment  = %r" % ctl.get("comment"))
        maint = meta.get("maintainer")
        t(isinstance(maint, str) and maint or isinstance(maint, list) and maint and
          all(isinstance(m, str) and m for m in maint),
          "META.json maintainer is a string or a list of strings", "maintainer = %r" % (maint,))
        lic = meta.get("license")
        lic_ok = (isinstance(lic, str) and lic in LICENSES or
                  isinstance(lic, list) and lic and all(x in LICENSES for x in lic) or
                  isinstance(lic, dict) and lic and
                  all(isinstance(u, str) and re.match(r"^https?://", u) for u in lic.values()))
        t(lic_ok, "META.json license is one meta-spec 1.0 knows", "license = %r" % (lic,))
        prov = meta.get("provides", {}).get(name) if isinstance(meta.get("provides"), dict) else None
        t(isinstance(prov, dict) and prov.get("version") == version,
          "META.json provides %s at version %s" % (name, version), "provides = %r" % (meta.get("provides"),))
        pfile = prov.get("file", "") if isinstance(prov, dict) else ""
        t(pfile and os.path.isfile(os.path.join(root, pfile)),
          "META.json provides.%s.file exists" % name, "file = %r" % pfile)
        pg = meta.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL")
        majors = [int(v) for v in (line.split("#")[0].strip()
                                   for line in read(root, "debian/pgversions").splitlines())
                  if v.isdigit()]
        bad = [m for m in majors if pg is None or not pg_range_admits(pg, m)]
        t(majors and not bad,
          "META.json's PostgreSQL prereq admits every major of debian/pgversions (%s)"
          % " ".join(map(str, majors)), "PostgreSQL = %r, not admitted: %s" % (pg, bad) if bad else "")

    first = read(root, "debian/changelog").splitlines()[0] if os.path.isfile(
        os.path.join(root, "debian/changelog")) else ""
    m = re.match(r"^(\S+) \(([^)]+)\) ", first)
    src, dver = (m.group(1), m.group(2)) if m else ("", "")
    upstream = re.sub(r"^\d+:", "", dver).rsplit("-", 1)[0]
    t(src == name and upstream == version,
      "debian/changelog: source %s, upstream version = default_version (%s)" % (name, version),
      "first line: %r" % first)

    cin = read(root, "debian/control.in")
    pkgs = re.findall(r"^Package:\s*(\S+)", cin, re.M)
    t(pkgs == ["postgresql-PGVERSION-%s" % name],
      "debian/control.in builds one package postgresql-PGVERSION-%s" % name, "packages: %r" % pkgs)
    dep = re.search(r"^Package:.*?^Depends:(.*?)(?=^\S)", cin, re.M | re.S)
    dep = dep.group(1) if dep else ""
    t("${shlibs:Depends}" in dep and "${postgresql:Depends}" in dep,
      "debian/control.in Depends name ${shlibs:Depends} and ${postgresql:Depends}",
      "Depends:%s" % dep.rstrip())
    return out


def report(results, n0=0):
    fails = 0
    for i, (ok, desc, details) in enumerate(results, n0 + 1):
        print("%s %d - %s" % ("ok" if ok else "not ok", i, desc))
        if not ok:
            fails += 1
            for d in details:
                print("#   " + d)
    return fails


# each case: (description, file, function text -> broken text, the check that must fail)
def _sub(pat, rep):
    return lambda s: re.sub(pat, rep, s, count=1, flags=re.M)


CASES = [
    ("control's default_version moves on", "kizunasync.control",
     _sub(r"^default_version = '[^']*'", "default_version = '9.9.9'"), "META.json version ="),
    ("control's default_version moves on", "kizunasync.control",
     _sub(r"^default_version = '[^']*'", "default_version = '9.9.9'"), "debian/changelog"),
    ("META.json version differs", "META.json",
     _sub(r'^  "version": "[^"]*"', '  "version": "0.0.1"'), "META.json version ="),
    ("META.json provides another version", "META.json",
     _sub(r'^      "version": "[^"]*"', '      "version": "0.0.1"'), "META.json provides"),
    ("META.json abstract differs", "META.json", _sub(r'^  "abstract": "', '  "abstract": "x'),
     "META.json abstract"),
    ("META.json without a license", "META.json", _sub(r'^  "license": .*\n', ""),
     "requires"),
    ("META.json with an unknown license word", "META.json",
     _sub(r'^  "license": .*,', '  "license": "proprietary-ish",'), "license is one"),
    ("META.json provides a missing file", "META.json",
     _sub(r'"file": "[^"]*"', '"file": "nowhere.sql"'), "file exists"),
    ("META.json PostgreSQL range leaves out 17", "META.json",
     _sub(r'"PostgreSQL": "[^"]*"', '"PostgreSQL": ">= 15.0.0, < 16.0.0"'), "PostgreSQL prereq"),
    ("META.json is not JSON", "META.json", lambda s: s + "}", "META.json parses"),
    ("debian/changelog version differs", "debian/changelog",
     _sub(r"^kizunasync \(([^)-]*)", "kizunasync (0.0.1"), "debian/changelog"),
    ("debian/control.in Depends lack shlibs", "debian/control.in",
     lambda s: s.replace("${shlibs:Depends},", ""), "Depends name"),
    ("debian/control.in Depends lack the server major", "debian/control.in",
     lambda s: s.replace("${postgresql:Depends},", ""), "Depends name"),
    ("debian/control.in package renamed", "debian/control.in",
     lambda s: s.replace("Package: postgresql-PGVERSION-kizunasync", "Package: kizunasync"),
     "builds one package"),
]


def self_test(root):
    fails = 0
    n = 0
    base = check(root)
    n += 1
    bad = [d for ok, d, _ in base if not ok]
    print("%s %d - self-test: the checkout passes before anything is broken" % ("not ok" if bad else "ok", n))
    if bad:
        fails += 1
        for d in bad:
            print("#   fails: " + d)
    for desc, rel, brk, want in CASES:
        n += 1
        with tempfile.TemporaryDirectory() as tmp:
            for f in FILES:
                os.makedirs(os.path.dirname(os.path.join(tmp, f)) or tmp, exist_ok=True)
                shutil.copy(os.path.join(root, f), os.path.join(tmp, f))
            try:
                pfile = json.loads(read(root, "META.json"))["provides"]["kizunasync"]["file"]
                shutil.copy(os.path.join(root, pfile), os.path.join(tmp, pfile))
            except (KeyError, OSError, ValueError):
                pass
            text = read(tmp, rel)
            broken = brk(text)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                f.write(broken)
            caught = [d for ok, d, _ in check(tmp) if not ok and want in d]
        ok = broken != text and caught
        print("%s %d - self-test: %s is caught (%s)" % ("ok" if ok else "not ok", n, desc, want))
        if not ok:
            fails += 1
            print("#   " + ("the case changed nothing" if broken == text else "no failing check names " + repr(want)))
    print("1..%d" % n)
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return 1 if self_test(a.root) else 0
    results = check(a.root)
    fails = report(results)
    print("1..%d" % len(results))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
