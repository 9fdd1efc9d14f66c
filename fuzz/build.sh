#!/usr/bin/env bash
# Build one libFuzzer target: fuzz/build.sh NAME
#
# A target is fuzz/fuzz_NAME.c (defining LLVMFuzzerTestOneInput) plus an
# optional fuzz/NAME.conf that sets SOURCES (project files to link, e.g.
# "src/cursor_core.c"), CFLAGS_EXTRA and LIBS.  Sources must build outside
# the backend (no postgres.h).  Output: fuzz/build/fuzz_NAME.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=${1:?usage: fuzz/build.sh NAME}
TARGET=$ROOT/fuzz/fuzz_$NAME.c
[ -f "$TARGET" ] || { echo "fuzz/build.sh: no target $TARGET" >&2; exit 2; }

SOURCES="" CFLAGS_EXTRA="" LIBS=""
# shellcheck disable=SC1090
[ -f "$ROOT/fuzz/$NAME.conf" ] && . "$ROOT/fuzz/$NAME.conf"

CC=${FUZZ_CC:-clang}
mkdir -p "$ROOT/fuzz/build"
srcs=("$TARGET")
for s in $SOURCES; do srcs+=("$ROOT/$s"); done

# shellcheck disable=SC2086
"$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Wall -Wextra -Werror $CFLAGS_EXTRA -I"$ROOT/src" \
	"${srcs[@]}" -o "$ROOT/fuzz/build/fuzz_$NAME" $LIBS
echo "fuzz/build.sh: built fuzz/build/fuzz_$NAME"
