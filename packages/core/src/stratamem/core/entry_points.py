"""The ``stratamem`` entry points of the installed distributions, read without ``importlib.metadata``.

Every ``stratamem`` process loads the plugins; ``pluggy``'s ``load_setuptools_entrypoints`` imports
``importlib.metadata`` (with ``email``, ``zipfile``, ``csv``, ``importlib.resources``) and builds a
``Distribution`` per installed package: ~20-25 ms of a fresh ``stratamem search`` against a running
service, whose whole budget is ~200 ms (bench/results/startup-session19.md). This reads the same
files (``<sys.path entry>/*.dist-info|*.egg-info/entry_points.txt``) with ``os`` alone, in the order
``importlib.metadata.distributions()`` finds them (path entries in order; in each directory the
listing order, grouped by normalized distribution name), and parses them as it does.

Where only ``importlib.metadata`` can look (a file such as a zip archive or an egg on ``sys.path``,
a meta-path finder of its own with ``find_distributions``), ``read`` answers None and the caller
falls back to it.
"""

from __future__ import annotations

import os
import re
import sys

#: ``importlib.metadata.EntryPoint.pattern``: ``module[:attr.attr] [extras]``
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


def _standard_finders_only() -> bool:
    from importlib.machinery import PathFinder

    return all(
        finder is PathFinder or not hasattr(finder, "find_distributions")
        for finder in sys.meta_path
    )


def _metadata_dirs(root: str) -> list[str] | None:
    """The ``*.dist-info``/``*.egg-info`` entries of one path entry in ``importlib.metadata``'s
    order; None when it is a file (a zip only ``importlib.metadata`` reads)."""
    base = root or "."
    try:
        children = os.listdir(base)
    except NotADirectoryError:
        return None
    except OSError:  # missing or unreadable: importlib.metadata finds nothing there either
        return []
    groups: dict[str, list[str]] = {}
    for child in children:
        low = child.lower()
        if low.endswith((".dist-info", ".egg-info")):
            name = re.sub(r"[-_.]+", "_", low.rpartition(".")[0].partition("-")[0])
            groups.setdefault(name, []).append(os.path.join(root, child))
    return [path for paths in groups.values() for path in paths]


def _pairs(text: str, group: str) -> list[tuple[str, str]]:
    """``name = value`` lines of section ``[group]`` (``importlib.metadata.Sectioned``'s rules)."""
    out, section = [], None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section == group:
            name, _, value = line.partition("=")
            out.append((name.strip(), value.strip()))
    return out


def read(group: str) -> list[tuple[str, str]] | None:
    """``(name, value)`` of every ``group`` entry point on ``sys.path``, duplicates included (the
    first of a name wins where they are loaded); None when ``importlib.metadata`` must look."""
    if not _standard_finders_only():
        return None
    found: list[tuple[str, str]] = []
    for root in sys.path:
        if not isinstance(root, str):
            return None
        dirs = None if root.lower().endswith(".egg") else _metadata_dirs(root)
        if dirs is None:  # a zip or an egg: importlib.metadata reads inside
            return None
        for path in dirs:
            try:
                with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:  # none, or an ``.egg-info`` file (no entry points)
                continue
            found += _pairs(text, group)
    return found


def load(value: str) -> object:
    """The object an entry point's value names (``module`` or ``module:attr.attr``)."""
    import importlib

    match = _VALUE.match(value)
    if match is None:
        raise ValueError(f"entry point value {value!r} is not 'module[:attr]'")
    obj: object = importlib.import_module(match.group("module"))
    for attr in filter(None, (match.group("attr") or "").split(".")):
        obj = getattr(obj, attr)
    return obj
