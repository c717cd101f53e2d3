"""The served path's memo caches hold a bounded number of bytes, reached within a soak's warm-up.

Each is an ``lru_cache`` of a pure function over texts or timestamps the rows bring: every new
trace is a new key, so a cache sized in thousands of entries kept growing the soak's process for
its whole 10k turns (``rank._norm`` ~2 MB until full at ~6k turns, ``format_time`` and
``hot_channels._tokens`` never full: soak-session11.md). Filled with 10k distinct keys here, each
must hold no more than its bound of traced bytes (the old sizes held 3-4 times as much).
"""

from __future__ import annotations

import gc
import importlib
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from stratamem.core.retrieval import hot_channels, render

# the module (the package's ``rank`` is the function of that name)
rank_mod = importlib.import_module("stratamem.core.retrieval.rank")


def _held(fn: Any, calls: Callable[[int], None], n: int = 10_000) -> int:
    """Traced bytes ``fn``'s cache holds after ``n`` calls with distinct keys."""
    fn.cache_clear()
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(n):
            calls(i)
        gc.collect()
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        fn.cache_clear()
    return held


TEXT = "I was wondering whether you remember the trip to {} we planned last spring (note {})"


@pytest.mark.parametrize(
    ("name", "fn", "call", "bound"),
    [
        (
            "rank._norm",
            rank_mod._norm,
            lambda i: rank_mod._norm(TEXT.format("Lisbon", i)),
            1_500_000,
        ),
        (
            "render.format_time",
            render.format_time,
            lambda i: render.format_time(1_796_207_399_702 + 60_000 * i, 0),
            300_000,
        ),
        (
            "hot_channels._tokens",
            hot_channels._tokens,
            lambda i: hot_channels._tokens(("trip", "lisbon", str(i), str(10_000 + i)), False),
            400_000,
        ),
    ],
)
def test_a_served_path_cache_holds_bounded_bytes(
    name: str, fn: Any, call: Callable[[int], None], bound: int
) -> None:
    held = _held(fn, call)
    assert held <= bound, f"{name}: {held / 1e6:.2f} MB held after 10k distinct keys"
