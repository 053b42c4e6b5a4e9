"""Thin Spark adapters over ``kwire.pipeline``: the only place pyspark is imported (``kwire[spark]``)."""

from kwire.pipeline.spark.session import build_session
from kwire.pipeline.spark.sources import FramesSource, LogSource, PcapSource, register_sources

__all__ = ["FramesSource", "LogSource", "PcapSource", "build_session", "register_sources"]
