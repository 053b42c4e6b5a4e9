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


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    """Columns padded to their widest cell; numbers right-aligned."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(r[i], int) for r in rows) and bool(rows) for i in range(len(headers))]

    def fmt(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    print(fmt(headers))
    for r in cells:
        print(fmt(r))
