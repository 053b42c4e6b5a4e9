"""Input helpers shared by the CLI subcommands."""

from __future__ import annotations

import sys

from kwire.cli import CliError


def read_input(path: str | None, *, hex_text: bool) -> bytes:
    """Bytes from FILE or stdin ('-'); with ``hex_text`` the input is hex (whitespace ignored)."""
    if path in (None, "-"):
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror}") from None
    if hex_text:
        text = b"".join(data.split()).decode("ascii", "replace")
        try:
            return bytes.fromhex(text)
        except ValueError as exc:
            raise CliError(f"input is not valid hex: {exc}") from None
    return data
