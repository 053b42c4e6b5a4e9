#!/usr/bin/env bash
# The whole test suite, from a clean checkout: installs what the tests need, then runs them:
# ruff, mypy, the codec staleness check, pytest on 2 cores, the broker/record/protocol tests again
# without the C extensions, and the C extensions under ASan/UBSan (tools/sanitize.sh).
# Usage: bash tools/test.sh [extra pytest args]   (extra args: only the main pytest run, with them)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/_venv.sh  # the active virtualenv, or the project's .venv

"$PY" -m pip install --quiet --disable-pip-version-check -e '.[test,spark]'
trap 'echo; kwire_where' EXIT  # however the run ends, say where the kwire command is
# The pipeline tests: tshark (cross-checks kwire's pcap reader) and a headless chromium (renders the
# HTML reports); Java for Spark is in the base image.
if ! command -v tshark >/dev/null || ! command -v chromium-headless-shell >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark chromium-headless-shell >/dev/null
    else
        echo "tshark/chromium-headless-shell missing and cannot apt-get: those tests will skip" >&2
    fi
fi
if [ -f tools/install_clients.sh ]; then
    bash tools/install_clients.sh
fi

echo "== ruff"
"$PY" -m ruff check kwire tests tools benchmarks
echo "== mypy"
"$PY" -m mypy kwire
echo "== codec is fresh"
"$PY" tools/gen_protocol.py --check

echo "== pytest"
set +e
"$PY" -m pytest -n 2 --dist loadgroup -p no:cacheprovider "$@"  # loadgroup: Spark tests share one JVM
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure here" >&2
    exit 1
fi
if [ "$rc" -ne 0 ] || [ "$#" -gt 0 ]; then
    exit "$rc"  # a failing main run, or a targeted run (extra args): nothing more
fi

# The pure-Python twins of the C loops and decoders must stay correct on their own (they serve
# wherever no compiler was at hand). Real clients add nothing here: they ran above.
echo "== pytest, pure Python (KWIRE_NO_EXTENSIONS=1)"
KWIRE_NO_EXTENSIONS=1 "$PY" -m pytest -n 2 -p no:cacheprovider -q -m "not conformance" \
    tests/broker tests/records tests/protocol

# The C extensions under ASan + UBSan over the decode tests (tools/sanitize.sh); skipped, with a
# note, where the compiler has no sanitizer runtime.
echo "== C extensions under AddressSanitizer + UndefinedBehaviorSanitizer"
if command -v "${CC:-gcc}" >/dev/null && [ -f "$("${CC:-gcc}" -print-file-name=libasan.so)" ]; then
    bash tools/sanitize.sh
else
    echo "no compiler with an ASan runtime: sanitizer run skipped" >&2
fi
