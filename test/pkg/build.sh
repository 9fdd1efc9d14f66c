#!/usr/bin/env bash
# Builds the Debian package postgresql-MAJOR-kizunasync from the source copy
# DIR/kizunasync-VERSION with PostgreSQL's Debian tooling, on a machine whose
# postgresql-common supports MAJOR (Debian 12 for 15; for 17 the Debian 13
# root of scripts/trixie.sh: test/pkg/run.sh enters it), and checks it:
#   pg_buildext updatecontrol, dpkg-buildpackage -us -uc -b; lintian on the
#   .changes (the package, its -dbgsym, the .buildinfo): no error (warnings
#   are listed); the package's name, version (= default_version), Depends
#   (the server major, libjansson4) and files (the library, the control
#   file, the install and upgrade scripts, nothing of kizunasync_test).
# Then builds the test-only extension kizunasync_test (test/ext) against the
# same major into DIR/testext (DESTDIR): never packaged, copied into the
# throwaway overlay of the clean root only after the package's own checks
# (test/pkg/install.sh).
# Prints TAP lines ("ok N - ...", "not ok N - ..."), ends with 1..N.
#
#   bash test/pkg/build.sh MAJOR DIR
set -uo pipefail
MAJOR=${1:?major}; DIR=$(cd "${2:?dir}" && pwd)
SRC=$(ls -d "$DIR"/kizunasync-*/ 2>/dev/null | head -n 1); SRC=${SRC%/}
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $1"; shift; [ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/#   /'; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else notok "$1" "got:  $2" "want: $3"; fi; }
finish() { echo "1..$n"; [ $fail -eq 0 ]; exit; }
export LANG=C.UTF-8 LC_ALL=C.UTF-8 DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-}

[ -n "$SRC" ] && [ -f "$SRC/kizunasync.control" ] || { notok "a source copy in $DIR/kizunasync-*"; finish; }
VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$SRC/kizunasync.control")
PKG=postgresql-$MAJOR-kizunasync
check "the source copy is named after default_version" "$(basename "$SRC")" "kizunasync-$VERSION"

# debian/control for the majors this machine supports (debian/pgversions
# intersected with postgresql-common's supported versions)
(cd "$SRC" && pg_buildext updatecontrol) > "$DIR/updatecontrol.log" 2>&1
check "pg_buildext updatecontrol: debian/control builds $PKG only here" \
	"$(grep '^Package:' "$SRC/debian/control" 2>/dev/null | tr '\n' ' ')" "Package: $PKG "

t0=$SECONDS rc=0
(cd "$SRC" && dpkg-buildpackage -us -uc -b -j2) > "$DIR/build.log" 2>&1 || rc=$?
deb=$DIR/${PKG}_${VERSION}-1_$(dpkg --print-architecture).deb
changes=$(ls "$DIR"/kizunasync_"$VERSION"-*.changes 2>/dev/null | head -n 1)
if [ $rc -eq 0 ] && [ -f "$deb" ] && [ -n "$changes" ]; then
	ok "dpkg-buildpackage built $(basename "$deb") in $((SECONDS - t0)) s"
else
	notok "dpkg-buildpackage built $PKG (exit $rc)" "$(tail -n 15 "$DIR/build.log")"; finish
fi
# compiler warnings (the Debian build flags add -Wformat -Werror=format-security)
w=$(grep -E '(warning|error): ' "$DIR/build.log" | grep -v '^dpkg-' | sort -u | head -n 10)
check "the build prints no compiler warning" "$w" ""

# lintian as an unprivileged user (it warns about root); errors fail
lintian_cmd=(lintian --info --display-info --pedantic --no-tag-display-limit "$changes")
if command -v runuser >/dev/null; then lintian_cmd=(runuser -u nobody -- env HOME=/tmp "${lintian_cmd[@]}"); fi
chmod -R a+rX "$DIR"
rc=0; "${lintian_cmd[@]}" > "$DIR/lintian.txt" 2>&1 || rc=$?
tags=$(grep -E '^[EWIPX]: ' "$DIR/lintian.txt" | sort -u)
echo "# lintian $(lintian --version | awk '{print $2}') on $(basename "$changes"): $(printf '%s\n' "$tags" | grep -c '^E: ') errors, $(printf '%s\n' "$tags" | grep -c '^W: ') warnings, $(printf '%s\n' "$tags" | grep -c '^[IP]: ') info/pedantic"
printf '%s\n' "$tags" | grep -E '^[EW]: ' | sed 's/^/#   /'
errs=$(printf '%s\n' "$tags" | grep '^E: ' || true)
if [ -z "$errs" ] && [ $rc -eq 0 ]; then ok "lintian reports no error"
else notok "lintian reports no error (exit $rc)" "$errs"; fi

field() { dpkg-deb -f "$deb" "$1"; }
check "the package is $PKG $VERSION-1" "$(field Package) $(field Version)" "$PKG $VERSION-1"
dep=$(field Depends)
echo "# Depends: $dep"
case ", $dep," in *", postgresql-$MAJOR "*|*", postgresql-$MAJOR,"*) ok "Depends names the server major (postgresql-$MAJOR)" ;;
	*) notok "Depends names the server major (postgresql-$MAJOR)" "$dep" ;; esac
case ", $dep," in *", libjansson4 "*|*", libjansson4,"*) ok "Depends names the jansson runtime library (libjansson4, from \${shlibs:Depends})" ;;
	*) notok "Depends names the jansson runtime library (libjansson4)" "$dep" ;; esac
files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's,^\./,/,')
ext=/usr/share/postgresql/$MAJOR/extension lib=/usr/lib/postgresql/$MAJOR/lib
missing=""
# every script: the frozen ones of the releases, the $VERSION install
# script and the upgrade to $VERSION that make builds (decisions/0080)
scripts=$( (cd "$SRC/sql" && ls kizunasync--*.sql; cd upgrade && ls ./*.pre.sql) |
	sed -e 's,^\./\(.*\)\.pre\.sql$,kizunasync--\1.sql,' | sort -u)
for f in "$lib/kizunasync.so" "$ext/kizunasync.control" "$ext/kizunasync--$VERSION.sql" $(printf "$ext/%s\n" $scripts); do
	printf '%s\n' "$files" | grep -qxF "$f" || missing="$missing $f"
done
check "the package installs the library, the control file, the $VERSION install script and every release's and upgrade script ($(echo $scripts | tr '\n' ' '))" "$missing" ""
check "the package installs nothing of kizunasync_test" "$(printf '%s\n' "$files" | grep kizunasync_test || true)" ""
other=$(printf '%s\n' "$files" | grep -vE "^/(\$|usr/\$|usr/(lib|share)/\$|usr/lib/postgresql/|usr/share/postgresql/|usr/share/doc/)" || true)
check "the package installs nothing outside PostgreSQL's directories and its doc" "$other" ""
check "the library links jansson" "$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ".$lib/kizunasync.so" > "$DIR/kizunasync.so" && objdump -p "$DIR/kizunasync.so" | awk '$1 == "NEEDED" && $2 ~ /^libjansson/ {print $2}')" "libjansson.so.4"

# the test-only extension, against the same major, for the clean root's tests
rm -rf "$DIR/testext"
rc=0
{ make -C "$SRC/test/ext" PG_CONFIG="/usr/lib/postgresql/$MAJOR/bin/pg_config" &&
  make -C "$SRC/test/ext" PG_CONFIG="/usr/lib/postgresql/$MAJOR/bin/pg_config" install DESTDIR="$DIR/testext" &&
  make -C "$SRC/test/ext" PG_CONFIG="/usr/lib/postgresql/$MAJOR/bin/pg_config" clean; } > "$DIR/testext.log" 2>&1 || rc=$?
if [ $rc -eq 0 ]; then ok "kizunasync_test built for $MAJOR into $DIR/testext (not packaged)"
else notok "kizunasync_test built for $MAJOR" "$(tail -n 10 "$DIR/testext.log")"; fi
finish
