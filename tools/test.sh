#!/usr/bin/env bash
# The whole test suite, from a clean checkout: installs what the tests need, then runs them.
# Usage: bash tools/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
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
python3 -m pytest -n 2 -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure here" >&2
    exit 1
fi
exit "$rc"
