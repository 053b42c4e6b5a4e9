#!/usr/bin/env bash
# The main job on embedded defaults: install kwire, then run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[demo]'
exec python3 -m kwire demo "$@"
