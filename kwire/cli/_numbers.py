"""Range-checked numeric options: every number the command line takes is one of these, so a
value out of range is one line and exit 2 (``--port 70000`` does not listen on 4464).

``tests/test_cli_numbers.py`` walks every subcommand's parser and fails on a numeric option that
is a bare ``int``/``float``, then gives each ``Number`` option values just outside its range.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

__all__ = ["Number", "PORT", "LISTEN_PORT", "BROKERS", "API_KEY", "API_VERSION", "TIMEOUT", "SECONDS", "COUNT",
           "SEED", "NODE_ID", "check_port"]


@dataclass(frozen=True, slots=True)
class Number:
    """An argparse ``type``: a whole number (``kind=int``) or a finite number (``float``) in
    [lo, hi]; ``lo_open`` makes the low end exclusive (a timeout must be above 0)."""

    kind: type
    lo: float
    hi: float
    lo_open: bool = False

    @property
    def __name__(self) -> str:  # argparse names the type in its own messages
        return "whole number" if self.kind is int else "number"

    def describe(self) -> str:
        lo = f"above {_plain(self.lo)}" if self.lo_open else f"at least {_plain(self.lo)}"
        return f"{lo} and at most {_plain(self.hi)}"

    def __call__(self, text: str) -> int | float:
        try:
            value: int | float = int(text, 10) if self.kind is int else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {self.__name__}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if value < self.lo or (self.lo_open and value == self.lo) or value > self.hi:
            raise argparse.ArgumentTypeError(f"{text} is out of range: must be {self.describe()}")
        return value


def _plain(limit: float) -> str:
    """A limit as people write it: 2147483647 and 31536000, not 2.14748e+09; 0.5 stays 0.5."""
    return str(int(limit)) if float(limit).is_integer() else f"{limit:g}"


LISTEN_PORT = Number(int, 0, 65535)  # 0: any free port
PORT = Number(int, 1, 65535)
BROKERS = Number(int, 1, 1000)
API_KEY = Number(int, 0, 32767)  # int16 on the wire
API_VERSION = Number(int, 0, 32767)
TIMEOUT = Number(float, 0, 86_400, lo_open=True)
SECONDS = Number(float, 0, 365 * 86_400, lo_open=True)
COUNT = Number(int, 1, 2**31 - 1)
SEED = Number(int, 0, 2**63 - 1)
NODE_ID = Number(int, 0, 2**31 - 1)


def check_port(text: str, what: str) -> int:
    """A port inside another option's text (``HOST:PORT``); raises ValueError naming ``what``."""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"{what}: port {text!r} is not 1-65535")
    return int(text)
