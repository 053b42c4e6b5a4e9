#!/usr/bin/env bash
# The whole test suite, from a clean checkout: installs what the tests need, then runs them.
# Usage: bash tools/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[test,spark]'
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
python3 -m ruff check kwire tests tools benchmarks
echo "== mypy"
python3 -m mypy kwire
echo "== codec is fresh"
python3 tools/gen_protocol.py --check

echo "== pytest"
set +e
python3 -m pytest -n 2 --dist loadgroup -p no:cacheprovider "$@"  # loadgroup: Spark tests share one JVM
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure here" >&2
    exit 1
fi
exit "$rc"
