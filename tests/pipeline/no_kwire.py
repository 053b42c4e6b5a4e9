"""A Python that stands for a worker machine without kwire installed: a ``sitecustomize`` refuses
to import kwire from anywhere but a zip on ``sys.path`` (what ``SparkContext.addPyFile`` puts there)."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["python_without_kwire"]

_ONLY_ZIPPED = '''
import sys
from importlib.machinery import PathFinder


class _OnlyZippedKwire:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "kwire":
            return None
        spec = PathFinder.find_spec(name, [p for p in sys.path if p.endswith(".zip")])
        if spec is None:
            raise ModuleNotFoundError("kwire is not installed on this worker", name=name)
        return spec


sys.meta_path.insert(0, _OnlyZippedKwire)
'''


def python_without_kwire(where: Path) -> Path:
    """An executable wrapper around this interpreter whose kwire can only come from a zip."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "sitecustomize.py").write_text(_ONLY_ZIPPED)
    python = where / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{where}${{PYTHONPATH:+:$PYTHONPATH}}" exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return python
