# Sourced by tools/run.sh and tools/test.sh: choose the Python to install into and run with.
# An active virtualenv is used as it is; otherwise the project's own .venv, created on first use
# with --system-site-packages, so what the machine already has is reused (nothing is downloaded
# twice) and the system Python is never written to (it may be "externally managed", PEP 668).
if [ -n "${VIRTUAL_ENV:-}" ]; then
    PY="$VIRTUAL_ENV/bin/python"
else
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv --system-site-packages .venv
    fi
    PY="$PWD/.venv/bin/python"
fi
export PATH="$(dirname "$PY"):$PATH"
export PYTHON="$PY"  # tools/install_clients.sh installs the pip clients with it

# The scripts' last words: where the `kwire` command is (the venv is not on the caller's PATH).
kwire_where() {
    local bin
    bin="$(dirname "$PY")"
    [ -x "$bin/kwire" ] || return 0
    if [ -n "${VIRTUAL_ENV:-}" ]; then
        echo "kwire is installed in the active virtualenv: run \`kwire --help\` (or $bin/kwire --help)"
    else
        echo "kwire is installed in .venv: \`source .venv/bin/activate\` then \`kwire --help\`, or run $bin/kwire --help"
    fi
}
