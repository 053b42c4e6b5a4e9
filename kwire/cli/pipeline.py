"""``kwire pipeline traffic|dlq|conformance INPUT --out DIR [--master URL | --engine local]``.

``traffic`` reads pcap/pcapng captures (files, globs or directories) into ``wire_exchanges`` and
``capture_issues``; ``dlq`` reads a log dir of ``TOPIC-N/`` partition directories (or one) into
``dlq_records`` and ``dlq_report``; ``conformance`` checks the client-behaviour rules of
``kwire.pipeline.conformance`` on captures into ``conformance_violations``. All write Parquet under ``--out``, an HTML report beside
it, and print a summary table. Spark (``pip install 'kwire[spark]'``) runs them on ``local[*]``
unless ``--master`` names another; ``--engine local`` runs the same code in this process.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_arguments", "run", "small_input_hint", "input_bytes", "check_inputs", "spark_failure",
           "SMALL_INPUT_BYTES"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="job", metavar="JOB")
    sub.required = True
    for name, help_ in (("traffic", "captures -> wire_exchanges, summary, HTML report"),
                        ("dlq", "DLQ partition dirs -> dlq_records, dlq_report, HTML report"),
                        ("conformance", "captures -> conformance_violations (client-behaviour rules)")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("inputs", nargs="+", metavar="INPUT",
                       help="a log dir of TOPIC-N/ partition dirs, or one partition dir" if name == "dlq"
                       else "pcap/pcapng files, globs or directories of them")
        if name == "dlq":
            p.add_argument("--topic", action="append", default=None, metavar="TOPIC",
                           help="only this dead-letter topic (repeatable); default: every topic under INPUT, a "
                                "topic whose records carry no DLQ headers shows as convention none")
        p.add_argument("--out", required=True, metavar="DIR", help="output directory (Parquet tables + report)")
        p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
        p.add_argument("--engine", choices=("spark", "local"), default="spark",
                       help="spark (default) or local: one process, no Spark")


def _print(result: Any, columns: tuple[str, ...], rows: list[dict[str, Any]] | None = None) -> None:
    from kwire.pipeline.report import text_table

    for name, n in result.tables.items():
        print(f"{name}: {n} rows")
    print(text_table(result.summary if rows is None else rows, columns))
    for note in result.notes:
        print(note)
    if result.report is not None:
        print(f"report: {result.report}")


# Below this much input a one-shot local Spark run is mostly Spark's own start-up (the JVM, then
# the first job's warm-up: ~15 s for 10 MB here, against well under a second in one process).
SMALL_INPUT_BYTES = 64 << 20


def input_bytes(job: str, inputs: list[str]) -> int:
    """The bytes a job would read (capture files, or every file under a dlq log dir)."""
    import os

    from kwire.pipeline.plan import expand_inputs

    if job != "dlq":
        return sum(os.path.getsize(p) for p in expand_inputs(inputs))
    total = 0
    for root in inputs:
        for d, _, files in os.walk(root):
            total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
    return total


def check_inputs(job: str, inputs: list[str], topics: list[str] | None) -> None:
    """Refuse, before any engine starts, the inputs that cannot give a table: nothing found, a file
    that is not a capture, a dlq input without partition directories (of the topics asked for)."""
    from kwire.cli import CliError

    if job == "dlq":
        from kwire.pipeline.logs import partition_dirs
        from kwire.records.segment import parse_partition_dir_name

        dirs = partition_dirs(inputs[0])
        if not dirs:
            raise CliError(f"{inputs[0]}: no partition directories (TOPIC-N/ holding .log segments) here")
        if topics:
            have = {parse_partition_dir_name(d)[0] for d in dirs}
            missing = sorted(set(topics) - have)
            if missing:
                raise CliError(f"{inputs[0]}: no partition directory of topic {', '.join(missing)} "
                               f"(topics here: {', '.join(sorted(have))})")
        return
    from kwire.capture.pcap import check_capture
    from kwire.pipeline.plan import expand_inputs

    paths = expand_inputs(inputs)
    if not paths:
        raise CliError(f"no pcap/pcapng captures (.pcap, .pcapng, .cap) in {', '.join(inputs)}")
    for path in paths:
        check_capture(path)


def spark_failure(exc: BaseException) -> str:
    """One line for a failed Spark job: kwire's own error when a task raised one, else the first
    line of Spark's message (the whole trace is in the logs of a cluster, not the terminal)."""
    import re

    text = str(exc)
    found = re.findall(r"kwire\.errors\.\w+: ([^\n]+)", text)
    if found:
        return found[-1].strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return first[:500]


def small_input_hint(job: str, inputs: list[str], master: str | None) -> str | None:
    """A line for stderr when ``--engine local`` would clearly be faster than a local Spark."""
    if master is not None and not master.startswith("local"):
        return None
    n = input_bytes(job, inputs)
    if n >= SMALL_INPUT_BYTES:
        return None
    size = f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.0f} kB"
    return (f"hint: {size} of input; --engine local gives the same tables without Spark's "
            "start-up (most of a small job's time)")


def run(args: argparse.Namespace) -> int:
    from kwire.cli import CliError

    if args.job == "dlq" and len(args.inputs) != 1:
        raise CliError("dlq takes one INPUT: a log dir or one partition directory")
    check_inputs(args.job, args.inputs, getattr(args, "topic", None))
    if args.engine == "local":
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise CliError("the pipeline writes Parquet with pyarrow: pip install 'kwire[spark]' "
                           "(--engine local then runs without starting Spark)")
        from kwire.pipeline import jobs

        print(f"running {args.job} in this process", file=sys.stderr)
        local = {"traffic": lambda: jobs.traffic_job(args.inputs, args.out),
                 "dlq": lambda: jobs.dlq_job(args.inputs[0], args.out, topics=args.topic),
                 "conformance": lambda: jobs.conformance_job(args.inputs, args.out)}
        result = local[args.job]()
    else:
        import importlib.util

        if importlib.util.find_spec("pyspark") is None:
            raise CliError("Spark is not installed: pip install 'kwire[spark]' (it also brings what --engine local needs)")
        from kwire.pipeline.spark import build_session
        from kwire.pipeline.spark import jobs as sjobs

        hint = small_input_hint(args.job, args.inputs, args.master)
        if hint is not None:
            print(hint, file=sys.stderr)
        print(f"starting Spark ({args.master or 'local[*]'})", file=sys.stderr)
        try:
            spark = build_session(args.master)
        except Exception as exc:  # noqa: BLE001 - as below: one line, not a JVM trace
            raise CliError(f"Spark did not start: {spark_failure(exc)}") from exc
        try:
            print(f"running {args.job}", file=sys.stderr)
            on_spark = {"traffic": lambda: sjobs.traffic_job(spark, args.inputs, args.out),
                        "dlq": lambda: sjobs.dlq_job(spark, args.inputs[0], args.out, topics=args.topic),
                        "conformance": lambda: sjobs.conformance_job(spark, args.inputs, args.out)}
            try:
                result = on_spark[args.job]()
            except CliError:
                raise
            except Exception as exc:  # noqa: BLE001 - Py4J and Spark raise many kinds; one line for the terminal
                raise CliError(f"the Spark job failed: {spark_failure(exc)}") from exc
        finally:
            spark.stop()
    if args.job == "traffic":
        _print(result, ("client_id", "client_software_name", "api_name", "api_version", "exchanges", "answered",
                        "with_errors", "latency_us_max"))
    elif args.job == "conformance":
        _print(result, ("rule_id", "severity", "api_key", "api_version", "violations"))
    else:
        from kwire.pipeline.dlq import split_not_dlq

        # topics without dead-letter headers are named once, in the notes, not as rows
        _print(result, ("topic", "original_topic", "original_partition", "group_id", "convention", "records",
                        "min_delivery_count", "max_delivery_count"), split_not_dlq(result.summary)[0])
    return 0
