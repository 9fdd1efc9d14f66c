#!/usr/bin/env bash
# Installs the package built by test/pkg/build.sh into a clean root that has
# only the PostgreSQL server of its major (scripts/cleanroot.sh: Debian 12 +
# postgresql-15, Debian 13 + postgresql-17), and tests it there (issue 31):
#   1. the root is clean: the server, and none of the build's tools (gcc,
#      make, server headers, jansson's headers), no jansson, no kizunasync;
#   2. `apt install ./postgresql-MAJOR-kizunasync_*.deb` as the README says
#      (apt resolves the Depends: libjansson4 comes from the archive); every
#      kizunasync file under PostgreSQL's directories is the package's;
#   3. a cluster of the root's own server (initdb, pg_ctl as its postgres
#      user, on a socket inside the root): CREATE EXTENSION kizunasync works
#      and loads the library; CREATE EXTENSION kizunasync VERSION '0.1.0'
#      from the package's 0.1.0 script, then ALTER EXTENSION kizunasync
#      UPDATE reaches default_version with exactly the objects of a fresh
#      install (test/t/schema_objects.sql);
#   4. the test-only extension kizunasync_test (built by build.sh, never
#      packaged) is copied in, its files listed, and the regress lane runs
#      with the root's own pg_regress and pg_isolation_regress (they come
#      with postgresql-client-MAJOR): test/sql and test/specs against
#      expected/, as `make installcheck` runs them.
# The root is an overlay over the cached clean root, in a private mount
# namespace: everything installed or written here is gone afterwards (the
# regress outputs are kept in DIR/out).  Needs root.
# Prints TAP lines, ends with 1..N; regress and isolation tests count one each.
#
#   bash test/pkg/install.sh MAJOR DIR
set -uo pipefail
if [ "${KZ_PKG_NS:-}" != 1 ]; then
	exec unshare --mount --propagation private env KZ_PKG_NS=1 bash "$0" "$@"
fi
MAJOR=${1:?major}; DIR=$(cd "${2:?dir}" && pwd)
CHECKOUT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$CHECKOUT/kizunasync.control")
PKG=postgresql-$MAJOR-kizunasync
DEB=$DIR/${PKG}_${VERSION}-1_$(dpkg --print-architecture).deb
BIN=/usr/lib/postgresql/$MAJOR/bin PGXS=/usr/lib/postgresql/$MAJOR/lib/pgxs
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $1"; shift; [ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/#   /'; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else notok "$1" "got:  $2" "want: $3"; fi; }

W=$(mktemp -d "/tmp/kizunasync-pkg$MAJOR.XXXXXX")
R=$W/root
PGRUN=""
cleanup() {
	[ -z "$PGRUN" ] || as_pg "$BIN/pg_ctl" -D /kz/data -m immediate -w stop >/dev/null 2>&1 || true
	[ ! -f "$R/kz/log/postgres.log" ] || cp "$R/kz/log/postgres.log" "$DIR/postgres.log"
	awk -v r="$R/" 'index($2, r) == 1 || $2 == substr(r, 1, length(r) - 1) {print $2}' /proc/mounts |
		sort -r | while read -r mp; do umount -l "$mp"; done
	rm -rf "$W"
}
trap cleanup EXIT
finish() { echo "1..$n"; [ $fail -eq 0 ]; exit; }
# a command inside the root, as root / as the root's postgres user
in_root() {
	chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root \
		DEBIAN_FRONTEND=noninteractive PGHOST=/kz/sock PGPORT=5432 PGUSER=postgres "$@"
}
as_pg() {
	chroot --userspec="$PGUID:$PGGID" "$R" /usr/bin/env -i PATH=/usr/bin:/bin LANG=C.UTF-8 "$@"
}
q() { local db=$1; shift; in_root psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }

[ -f "$DEB" ] || { notok "the package to install ($DEB)"; finish; }
CLEAN=$(bash "$CHECKOUT/scripts/cleanroot.sh" build "$MAJOR") || { notok "the clean root for $MAJOR (scripts/cleanroot.sh)"; finish; }
# a shared lock: no rebuild of the cached root while it is our overlay's lower layer
exec 8< "$CLEAN.lock"; flock -s 8
mkdir -p "$W/upper" "$W/work" "$R"
if mount -t overlay overlay -o "lowerdir=$CLEAN,upperdir=$W/upper,workdir=$W/work" "$R" 2>"$W/overlay.err"; then
	how="an overlay over $CLEAN"
else
	echo "# no overlay mount here ($(cat "$W/overlay.err")): copying $CLEAN instead"
	rmdir "$R"; cp -a "$CLEAN" "$R"; how="a copy of $CLEAN"
fi
mount -t proc proc "$R/proc"
mount -t tmpfs -o size=512m,mode=1777 shm "$R/dev/shm"
echo "# clean root: $how ($(cat "$CLEAN/.kizunasync-root"))"

# 1. clean: the server of its major, nothing of the build
check "the clean root has postgresql-$MAJOR installed" \
	"$(in_root dpkg-query -W -f='${db:Status-Status}' "postgresql-$MAJOR" 2>&1)" "installed"
present=""
for p in gcc make pkg-config libjansson-dev libjansson4 postgresql-server-dev-$MAJOR postgresql-server-dev-all \
	debhelper dpkg-dev "$PKG"; do
	[ "$(in_root dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] && present="$present $p"
done
check "the clean root has no build tool, no server headers, no jansson, no kizunasync" "$present" ""
check "the clean root has no kizunasync file" \
	"$(cd "$R" && ls -d ./usr/share/postgresql/*/extension/kizunasync* ./usr/lib/postgresql/*/lib/kizunasync* 2>/dev/null)" ""
in_root dpkg-query -W -f='${Package}\n' | sort > "$W/before.pkgs"

# 2. the README's install command
mkdir -p "$R/kz/debs"; cp "$DEB" "$R/kz/debs/"
rc=0
{ in_root apt-get update -qq && in_root apt install -y "./kz/debs/$(basename "$DEB")"; } > "$DIR/apt-install.log" 2>&1 || rc=$?
# apt and dpkg resolve relative .deb paths from the root's / : run there
check "apt install ./$(basename "$DEB") in the clean root" \
	"$rc $(in_root dpkg-query -W -f='${db:Status-Status} ${Version}' "$PKG" 2>&1)" "0 installed $VERSION-1"
[ $rc -eq 0 ] || { sed 's/^/#   /' "$DIR/apt-install.log" | tail -n 20; finish; }
in_root dpkg-query -W -f='${Package}\n' | sort > "$W/after.pkgs"
added=$(comm -13 "$W/before.pkgs" "$W/after.pkgs" | tr '\n' ' ')
echo "# apt installed: $added"
case " $added " in *" libjansson4 "*) ok "apt pulled the jansson runtime library (libjansson4) through the package's Depends" ;;
	*) notok "apt pulled the jansson runtime library (libjansson4) through the package's Depends" "added: $added" ;; esac
stray=""
for f in $(cd "$R" && ls -d usr/share/postgresql/*/extension/kizunasync* usr/lib/postgresql/*/lib/kizunasync* \
	usr/lib/postgresql/*/lib/bitcode/kizunasync* 2>/dev/null); do
	in_root dpkg-query -S "/$f" >/dev/null 2>&1 || stray="$stray /$f"
done
check "every kizunasync file under PostgreSQL's directories belongs to $PKG" "$stray" ""

# 3. a cluster of the root's own server
PGUID=$(chroot "$R" id -u postgres) PGGID=$(chroot "$R" id -g postgres)
mkdir -p "$R/kz/sock" "$R/kz/data" "$R/kz/log" "$DIR/out"
chown "$PGUID:$PGGID" "$R/kz/sock" "$R/kz/data" "$R/kz/log"; chmod 700 "$R/kz/data"; chmod 777 "$DIR/out"
rc=0
as_pg "$BIN/initdb" -D /kz/data -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 > "$DIR/initdb.log" 2>&1 || rc=$?
cat >> "$R/kz/data/postgresql.conf" <<CONF
listen_addresses = ''
port = 5432
unix_socket_directories = '/kz/sock'
max_connections = 120
max_prepared_transactions = 10
shared_buffers = 128MB
fsync = off
log_min_messages = warning
CONF
[ $rc -ne 0 ] || as_pg "$BIN/pg_ctl" -D /kz/data -l /kz/log/postgres.log -w -t 60 start > "$DIR/pg_ctl.log" 2>&1 || rc=$?
if [ $rc -eq 0 ]; then PGRUN=1; ok "a PostgreSQL $MAJOR cluster of the root's own server is up ($(in_root "$BIN/postgres" --version))"
else notok "a PostgreSQL $MAJOR cluster of the root's own server starts" "$(tail -n 5 "$DIR/initdb.log" "$DIR/pg_ctl.log" "$R/kz/log/postgres.log" 2>/dev/null)"; finish; fi

# the test files the checks need, inside the root (the overlay's, thrown away)
mkdir -p "$R/kz/work/test/t"
cp -r "$CHECKOUT/test/sql" "$CHECKOUT/test/specs" "$CHECKOUT/test/setup" "$R/kz/work/test/"
cp -r "$CHECKOUT/expected" "$R/kz/work/test/expected"
cp "$CHECKOUT/test/t/schema_objects.sql" "$R/kz/work/test/t/"
mkdir -p "$R/kz/out"; mount --bind "$DIR/out" "$R/kz/out"

fresh() {  # a database with the Supabase stand-ins
	in_root createdb "$1" && q "$1" -f /kz/work/test/setup/standins.sql >/dev/null
}
fresh kz_pkg
rc=0; out=$(q kz_pkg -c "SET client_min_messages = warning; CREATE EXTENSION kizunasync" 2>&1) || rc=$?
check "CREATE EXTENSION kizunasync works with the package's files" \
	"$rc $(q kz_pkg -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'" 2>&1)" "0 $VERSION"
[ $rc -eq 0 ] || printf '%s\n' "$out" | sed 's/^/#   /'
check "its C functions name the package's library, which loads (LOAD 'kizunasync')" \
	"$(q kz_pkg -c "SELECT DISTINCT probin FROM pg_proc WHERE pronamespace = 'kizunasync'::regnamespace AND prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')" 2>&1) $(q kz_pkg -c "LOAD 'kizunasync'" 2>&1 && echo loaded)" \
	'$libdir/kizunasync loaded'
check "the library in the server's \$libdir is the package's" \
	"$(q kz_pkg -c "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'" 2>&1) $(in_root dpkg-query -S "/usr/lib/postgresql/$MAJOR/lib/kizunasync.so" 2>&1)" \
	"/usr/lib/postgresql/$MAJOR/lib $PKG: /usr/lib/postgresql/$MAJOR/lib/kizunasync.so"

fresh kz_pkg_up
rc=0; out=$(q kz_pkg_up -c "SET client_min_messages = warning; CREATE EXTENSION kizunasync VERSION '0.1.0'" 2>&1) || rc=$?
check "CREATE EXTENSION kizunasync VERSION '0.1.0' from the package's 0.1.0 script" \
	"$rc $(q kz_pkg_up -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'" 2>&1)" "0 0.1.0"
[ $rc -eq 0 ] || printf '%s\n' "$out" | sed 's/^/#   /'
path=$(q kz_pkg_up -c "SELECT path FROM pg_extension_update_paths('kizunasync') WHERE source = '0.1.0' AND target = '$VERSION'" 2>&1)
case "$path" in
	0.1.0--*$VERSION) ok "the package has an update path 0.1.0 -> $VERSION ($path)" ;;
	*) notok "the package has an update path 0.1.0 -> $VERSION" "$path" ;;
esac
rc=0; out=$(q kz_pkg_up -c "SET client_min_messages = warning; ALTER EXTENSION kizunasync UPDATE" 2>&1) || rc=$?
check "ALTER EXTENSION kizunasync UPDATE reaches $VERSION" \
	"$rc $(q kz_pkg_up -c "SELECT extversion FROM pg_extension WHERE extname = 'kizunasync'" 2>&1)" "0 $VERSION"
[ $rc -eq 0 ] || printf '%s\n' "$out" | sed 's/^/#   /'
rc=0
q kz_pkg -f /kz/work/test/t/schema_objects.sql > "$DIR/out/fresh.objects" 2>&1 || rc=$?
q kz_pkg_up -f /kz/work/test/t/schema_objects.sql > "$DIR/out/upgraded.objects" 2>&1 || rc=$?
d=$(diff "$DIR/out/fresh.objects" "$DIR/out/upgraded.objects" | head -n 40)
if [ $rc -ne 0 ]; then
	notok "the updated extension has exactly the objects of a fresh $VERSION install (the listing failed)" \
		"$(head -n 3 "$DIR/out/fresh.objects" "$DIR/out/upgraded.objects")"
elif [ -z "$d" ] && [ -s "$DIR/out/fresh.objects" ]; then
	ok "the updated extension has exactly the objects of a fresh $VERSION install ($(wc -l < "$DIR/out/fresh.objects") catalog facts)"
else
	notok "the updated extension has exactly the objects of a fresh $VERSION install (< fresh, > updated)" "$d"
fi
in_root dropdb kz_pkg; in_root dropdb kz_pkg_up

# 4. the test-only extension, after the package's checks, then the regress lane
if [ -d "$DIR/testext" ]; then
	cp -a "$DIR/testext/." "$R/"
	echo "# test-only files copied into the root (not the package's):"
	(cd "$DIR/testext" && find . -type f | sort | sed 's,^\.,#   ,')
else
	notok "the test-only extension kizunasync_test was built (test/pkg/build.sh)"
fi
regress=$(cd "$CHECKOUT/test/sql" && ls *.sql | LC_ALL=C sort | sed 's/\.sql$//' | tr '\n' ' ')
specs=$(cd "$CHECKOUT/test/specs" && ls *.spec | LC_ALL=C sort | sed 's/\.spec$//' | tr '\n' ' ')
# what `make installcheck` runs (the Makefile's REGRESS_OPTS, ISOLATION_OPTS)
for part in regress isolation; do
	log=$DIR/out/installcheck-$part.log rc=0
	rm -rf "$DIR/out/$part"
	if [ $part = regress ]; then
		# shellcheck disable=SC2086
		in_root bash -c 'cd /kz/work && exec "$@"' _ "$PGXS/src/test/regress/pg_regress" --bindir="$BIN" \
			--inputdir=test --outputdir=/kz/out/regress --dbname=contrib_regression $regress > "$log" 2>&1 || rc=$?
	else
		# shellcheck disable=SC2086
		in_root bash -c 'cd /kz/work && exec "$@"' _ "$PGXS/src/test/isolation/pg_isolation_regress" --bindir="$BIN" \
			--inputdir=test --outputdir=/kz/out/isolation --dbname=isolation_regression $specs > "$log" 2>&1 || rc=$?
	fi
	# pg_regress of 15: "test X ... ok"; of 16 and later, TAP: "ok 1 - X"
	results=$(awk '
		/\.\.\. *(ok|FAILED|failed)/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^\.\.\./) { name = $i; break }
			print (($0 ~ /\.\.\. *ok/) ? "pass " : "fail ") name; next }
		/^(not )?ok [0-9]+ +[-+] / { st = ($1 == "not") ? "fail" : "pass"; sub(/^(not )?ok [0-9]+ +[-+] +/, ""); print st " " $1 }' "$log")
	while read -r st name; do
		[ -n "$st" ] || continue
		if [ "$st" = pass ]; then ok "$part on the installed package: $name"
		else notok "$part on the installed package: $name" "see $DIR/out/$part/regression.diffs"; fi
	done <<< "$results"
	if [ $rc -ne 0 ] && ! grep -q '^fail ' <<< "$results"; then
		notok "$part: pg_regress exit $rc" "$(tail -n 10 "$log")"
	elif [ -z "$results" ]; then notok "$part ran tests" "$(tail -n 10 "$log")"; fi
	if [ -s "$DIR/out/$part/regression.diffs" ]; then head -n 60 "$DIR/out/$part/regression.diffs" | sed 's/^/#   /'; fi
done
finish
