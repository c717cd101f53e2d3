"""Stratamem adapter for the hermes host (host ordering lives here).

Importing this package never imports Hermes: ``stratamem.hermes.provider`` does, on demand.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["StratamemMemoryProvider", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "StratamemMemoryProvider":
        from stratamem.hermes.provider import StratamemMemoryProvider

        return StratamemMemoryProvider
    raise AttributeError(name)
