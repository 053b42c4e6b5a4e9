"""``kwire records``: inspect record batches and log segments.

``kwire records dump PATH`` prints one JSON line per record (or per batch with ``--batches``).
PATH is a segment file, a partition directory (``<topic>-<partition>/``) or any file of raw
batches back to back. Keys, values and header values print as UTF-8 strings where valid, else
as ``{"hex": "..."}``. ``--verify`` checks every CRC and exits 1 naming the corrupt offsets.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="records_command", metavar="ACTION")
    sub.required = True
    dump = sub.add_parser(
        "dump",
        help="print records (or batch headers) as JSON lines",
        description="Print one JSON line per record of a segment file, partition dir or raw batch file. "
        "Bytes print as UTF-8 strings where valid, else as {\"hex\": ...}.",
    )
    dump.add_argument("path", metavar="PATH", help="a .log segment, a <topic>-<partition> dir, or raw batch bytes")
    dump.add_argument("--batches", action="store_true", help="one line per batch header, records not decoded")
    dump.add_argument(
        "--verify", action="store_true", help="check every CRC; exit 1 naming the offset of each corrupt batch"
    )


def _text(b: bytes | None) -> str | dict[str, str] | None:
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def _control(record: Any) -> dict[str, Any]:
    """The parsed control record: marker type and coordinator epoch, or the raw type id."""
    from kwire.errors import RecordError
    from kwire.records import ControlRecordType, parse_control_key, parse_control_record

    try:
        _, kind = parse_control_key(record.key)
        if kind in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            marker = parse_control_record(record)
            return {"type": marker.type.name, "coordinator_epoch": marker.coordinator_epoch}
        return {"type": kind.name if isinstance(kind, ControlRecordType) else kind}
    except RecordError as exc:
        return {"error": str(exc)}


def _sources(path: Path) -> Iterator[tuple[str, bytes]]:
    from kwire.errors import SegmentError
    from kwire.records import list_segments

    if path.is_dir():
        segments = list_segments(path)
        if not segments:
            raise SegmentError(f"{path} holds no .log segments")
        for _, seg in segments:
            yield str(seg), seg.read_bytes()
    elif path.exists():
        yield str(path), path.read_bytes()
    else:
        from kwire.cli import CliError

        raise CliError(f"{path}: no such file or directory")


def _batch_line(batch: Any, source: str, crc_ok: bool | None) -> dict[str, Any]:
    d: dict[str, Any] = batch.header_dict()
    d["file"] = source
    if crc_ok is not None:
        d["crc_valid"] = crc_ok
    return d


def _dump(args: argparse.Namespace) -> int:
    from kwire.errors import CorruptBatchError, RecordError
    from kwire.records import iter_batches

    out = sys.stdout
    corrupt: list[str] = []
    for source, data in _sources(Path(args.path)):
        it = iter_batches(data, verify_crc=False)
        while True:
            try:
                batch = next(it)
            except StopIteration:
                break
            except RecordError as exc:
                # the framing itself is broken: nothing after this point can be located
                corrupt.append(f"{source}: byte {it.position}: {exc}")
                break
            crc_ok: bool | None = None
            if args.verify:
                try:
                    batch.validate()
                    crc_ok = True
                except CorruptBatchError as exc:
                    crc_ok = False
                    corrupt.append(f"{source}: offset {exc.base_offset}: {exc}")
                except RecordError as exc:
                    crc_ok = False
                    corrupt.append(f"{source}: offset {batch.last_offset}: {exc}")
            if args.batches:
                out.write(json.dumps(_batch_line(batch, source, crc_ok)) + "\n")
                continue
            if crc_ok is False:
                continue  # do not decode what failed its checksum
            common = {
                "producer_id": batch.producer_id,
                "producer_epoch": batch.producer_epoch,
                "base_sequence": batch.base_sequence,
                "is_transactional": batch.is_transactional,
                "is_control": batch.is_control,
                "magic": batch.magic,
            }
            try:
                for r in batch:
                    line = {
                        "offset": r.offset,
                        "timestamp": r.timestamp,
                        "key": _text(r.key),
                        "value": _text(r.value),
                        "headers": [[k, _text(v)] for k, v in r.headers],
                        **common,
                    }
                    if batch.is_control:
                        line["control"] = _control(r)
                    out.write(json.dumps(line) + "\n")
            except RecordError as exc:
                if not args.verify:
                    raise
                corrupt.append(f"{source}: offset {batch.last_offset}: {exc}")
        if it.partial_bytes:
            print(
                f"kwire records: {source}: torn tail of {it.partial_bytes} bytes at byte {it.position} skipped",
                file=sys.stderr,
            )
    for problem in corrupt:
        print(f"kwire records: corrupt: {problem}", file=sys.stderr)
    return 1 if corrupt else 0


def run(args: argparse.Namespace) -> int:
    if args.records_command == "dump":
        return _dump(args)
    from kwire.cli import CliError

    raise CliError(f"unknown action {args.records_command!r}")
