"""Every numeric option of every ``kwire`` subcommand is range-checked: a value outside its range
is one line on stderr and exit status 2. The parsers are walked, so a new option is covered (and a
bare ``type=int``/``type=float`` fails here)."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from contextlib import redirect_stderr

import pytest

from kwire.cli import build_parser, main
from kwire.cli._numbers import Number


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...],
                                                                                           argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))
        else:
            yield path, action


ACTIONS = list(_walk(build_parser(None, every=True)))
NUMERIC = [(path, a) for path, a in ACTIONS if isinstance(a.type, Number)]


def _bad_values(n: Number) -> list[str]:
    step = 1 if n.kind is int else 0.5
    low = n.lo if n.lo_open else n.lo - step
    out = [f"{low:g}" if n.kind is float else str(int(low)), str(int(n.hi) + 1) if n.kind is int else f"{n.hi * 2:g}",
           "abc"]
    if n.kind is float:
        out += ["nan", "inf"]
    else:
        out.append("1.5")
    return out


def test_every_subcommand_is_walked() -> None:
    paths = {path[0] for path, _ in ACTIONS if path}
    assert {"broker", "decode", "encode", "fuzz", "demo", "conform", "topics", "groups", "configs", "records",
            "pipeline", "dlq", "replay", "apis"} <= paths
    assert len(NUMERIC) >= 15


def test_no_numeric_option_goes_unchecked() -> None:
    bare = [(path, a.option_strings or a.dest) for path, a in ACTIONS if a.type in (int, float)]
    assert bare == []


@pytest.mark.parametrize(("path", "action"), NUMERIC, ids=[f"{' '.join(p)} {a.option_strings[0]}" for p, a in NUMERIC])
def test_out_of_range_values_are_one_line_and_exit_2(path: tuple[str, ...], action: argparse.Action) -> None:
    assert isinstance(action.type, Number)
    for value in _bad_values(action.type):
        err = io.StringIO()
        with redirect_stderr(err), pytest.raises(SystemExit) as exit_:
            main([*path, action.option_strings[0], value])
        assert exit_.value.code == 2, value
        lines = err.getvalue().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"kwire {' '.join(path)}: error: argument {'/'.join(action.option_strings)}")


def test_in_range_values_parse() -> None:
    for _path, action in NUMERIC:
        assert isinstance(action.type, Number)
        lo = action.type.lo + (1 if action.type.lo_open else 0)
        assert action.type(str(int(lo))) == lo
        assert action.type(str(int(action.type.hi))) == action.type.hi


def test_port_70000_does_not_listen_and_ports_inside_other_options_are_checked(
        capsys: pytest.CaptureFixture[str]) -> None:
    """70000 used to listen on 4464 (70000 mod 65536); a broker range past 65535 and a bootstrap
    port out of range are refused too, before any socket is opened."""
    assert main(["broker", "--port", "65535", "--brokers", "2"]) == 2
    assert capsys.readouterr().err == ("kwire broker: error: --port 65535 with --brokers 2: the last broker's port "
                                       "would be 65536, above 65535\n")
    for argv in (["topics", "-b", "127.0.0.1:70000"], ["groups", "-b", "127.0.0.1:0"],
                 ["configs", "-b", "127.0.0.1:65536", "--topic", "t"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is not 1-65535" in err
    assert main(["broker", "--topic", "t:0"]) == 2
    assert "PARTITIONS must be at least 1" in capsys.readouterr().err



def test_range_errors_print_integer_limits_as_integers() -> None:
    """2147483647 and 31536000 as written, not 2.14748e+09 / 3.1536e+07."""
    from kwire.cli._numbers import COUNT, SECONDS, Number

    with pytest.raises(argparse.ArgumentTypeError, match=r"at least 1 and at most 2147483647$"):
        COUNT("2147483648")
    assert SECONDS.describe() == "above 0 and at most 31536000"
    assert Number(float, 0.5, 2.5).describe() == "at least 0.5 and at most 2.5"
