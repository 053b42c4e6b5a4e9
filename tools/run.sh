#!/usr/bin/env bash
# The main job on embedded defaults: install kwire (into the active virtualenv or the project's
# .venv, see tools/_venv.sh; skipped when nothing changed since the last install), then run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/_venv.sh
stamp=".venv/.kwire-demo-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$PY" -c "import kwire" 2>/dev/null; then
    "$PY" -m pip install --quiet --disable-pip-version-check -e '.[demo]'
    mkdir -p .venv && echo "$want" > "$stamp"
fi
set +e
"$PY" -m kwire demo "$@"
rc=$?
set -e
echo
kwire_where
exit "$rc"
