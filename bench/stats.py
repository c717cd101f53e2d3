"""Latency summaries (min/median/p95 after warm-up) so every figure in the report is read the same way."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between order statistics (numpy's default)."""
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Summary:
    """One measured figure: N samples after warm-up, in ``unit``."""

    n: int
    min: float
    median: float
    p95: float
    mean: float
    unit: str = "ms"

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    def cell(self) -> str:
        """``median / p95 (min)`` for a markdown table."""
        return f"{fmt(self.median)} / {fmt(self.p95)} ({fmt(self.min)})"


def fmt(x: float) -> str:
    if math.isnan(x):
        return "–"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def summarize(samples: Sequence[float], unit: str = "ms") -> Summary:
    if not samples:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, unit)
    return Summary(
        n=len(samples),
        min=min(samples),
        median=percentile(samples, 50),
        p95=percentile(samples, 95),
        mean=sum(samples) / len(samples),
        unit=unit,
    )


class Samples:
    """Named lists of millisecond samples collected side by side (interleaved per query)."""

    def __init__(self) -> None:
        self.data: dict[str, list[float]] = {}

    def add(self, name: str, ms: float) -> None:
        self.data.setdefault(name, []).append(ms)

    def summaries(self) -> dict[str, Summary]:
        return {k: summarize(v) for k, v in self.data.items()}


async def time_async(fn: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """(elapsed ms, result) of one awaited call."""
    t0 = time.perf_counter()
    out = await fn()
    return (time.perf_counter() - t0) * 1000, out


def time_sync(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


async def repeat_async(
    fn: Callable[[], Awaitable[Any]], n: int, warmup: int = 3, unit: str = "ms"
) -> Summary:
    """``warmup`` discarded calls, then ``n`` timed calls."""
    for _ in range(warmup):
        await fn()
    out = []
    for _ in range(n):
        ms, _r = await time_async(fn)
        out.append(ms)
    return summarize(out, unit)
