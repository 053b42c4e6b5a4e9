#!/usr/bin/env bash
# The C extensions under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Builds kwire/protocol/_cdecode.c and kwire/records/_speedups.c with
# -fsanitize=address,undefined into a private copy of the tree (the normal builds are never
# touched), then runs the decode tests against them: the Hypothesis differential of the C decoder
# (tests/protocol/test_cdecode.py), the golden frames, the bad-input and null-element decode tests
# and the record tests (fixture batches, corruption, properties; C and Python loops). Any
# sanitizer report aborts the run.
#
# Usage: bash tools/sanitize.sh [extra pytest args]     (CC=clang picks clang's ASan runtime)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

CC=${CC:-gcc}
PY=${PYTHON:-python3}
case "$($CC --version | head -1)" in
    *clang*) asan_rt=$($CC -print-file-name=libclang_rt.asan-x86_64.so) ;;
    *) asan_rt=$($CC -print-file-name=libasan.so) ;;
esac
if [ ! -f "$asan_rt" ]; then
    echo "sanitize: $CC has no ASan runtime ($asan_rt)" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kwire-sanitize.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r kwire tests fixtures tools pyproject.toml "$work"/
find "$work/kwire" -name '*.so' -delete
find "$work" -name __pycache__ -prune -exec rm -rf {} +

include=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$($PY -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
# -fno-sanitize-recover: an undefined-behaviour report is fatal, like an ASan one.
flags=(-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
       -shared -fPIC -I"$include")
echo "== build ($CC, ASan + UBSan)"
$CC "${flags[@]}" "$root/kwire/protocol/_cdecode.c" -o "$work/kwire/protocol/_cdecode$suffix"
$CC "${flags[@]}" "$root/kwire/records/_speedups.c" -o "$work/kwire/records/_speedups$suffix"

# The interpreter is not instrumented, so the runtime must be loaded first (LD_PRELOAD).
# PYTHONMALLOC=malloc gives every Python object its own malloc block with ASan redzones, so a C
# loop reading past a bytes object is caught; leaks are the interpreter's, not ours.
export LD_PRELOAD="$asan_rt"
export PYTHONMALLOC=malloc
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export PYTHONPATH="$work"
unset KWIRE_NO_EXTENSIONS
cd "$work"

echo "== the sanitizers are live (deliberate faults must abort)"
cat > probe.c <<'EOF'
#include <limits.h>
#include <stdlib.h>
int kwire_overflow(int i) { volatile char *p = malloc(8); int v = p[i]; free((void *)p); return v; }
int kwire_ub(int i) { return INT_MAX + i; }
EOF
probe() {  # probe SANITIZER FUNCTION EXPECTED-REPORT
    $CC -O1 -g -fsanitize="$1" -fno-sanitize-recover=all -shared -fPIC probe.c -o "probe-$1.so"
    # (the trailing exit keeps bash from exec'ing the probe, so the abort notice lands in probe.err)
    if ($PY -c 'import ctypes, sys; getattr(ctypes.CDLL(sys.argv[1]), sys.argv[2])(8)' "$work/probe-$1.so" "$2";
            exit $?) 2>probe.err; then
        echo "sanitize: $2 went unnoticed: $1 is not active" >&2
        exit 1
    fi
    grep -q "$3" probe.err || { cat probe.err >&2; exit 1; }
    echo "   $1: $3"
}
probe address kwire_overflow heap-buffer-overflow
probe undefined kwire_ub "signed integer overflow"

echo "== the sanitized extensions are the ones loaded"
$PY - "$work" <<'EOF'
import sys
from kwire.protocol import _cdecode
from kwire.protocol._message import cdecode_enabled
from kwire.records import _speedups
from kwire.records.batch import speedups_enabled

work = sys.argv[1]
for mod in (_cdecode, _speedups):
    assert mod.__file__.startswith(work), f"{mod.__name__} loaded from {mod.__file__}, not the sanitized build"
assert cdecode_enabled() and speedups_enabled(), "the C paths are off: the tests would not exercise them"
print("  ", _cdecode.__file__, "\n  ", _speedups.__file__)
EOF

echo "== decode tests under the sanitizers"
$PY -m pytest -p no:cacheprovider -q -x \
    tests/protocol/test_cdecode.py tests/protocol/test_golden_frames.py tests/protocol/test_bad_input.py \
    tests/protocol/test_null_array_elements.py \
    tests/records "$@"
