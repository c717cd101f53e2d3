"""L2 policy gain (memos-core §5.4 step 6): does following a policy beat not following it?

Softmax-weighted mean of the with-set against a shrunk mean of the without-set, then an EMA.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: pseudo-count of the shrinkage toward the baseline
PSEUDO_COUNT = 5


def effective_with(values: Sequence[float], tau: float = 0.5) -> float:
    """Softmax-weighted mean (weights ∝ exp((V − maxV)/τ)) when there are ≥3 values, else the mean."""
    if not values:
        return 0.0
    if len(values) < 3:
        return sum(values) / len(values)
    top = max(values)
    t = max(1e-6, tau)
    w = [math.exp((v - top) / t) for v in values]
    return sum(wi * v for wi, v in zip(w, values, strict=True)) / sum(w)


def raw_gain(
    with_values: Sequence[float], without_values: Sequence[float], tau: float = 0.5
) -> float:
    pool = [*with_values, *without_values]
    pool_mean = sum(pool) / len(pool) if pool else 0.5
    baseline = min(0.5, max(0.2, pool_mean))
    n = len(without_values)
    mean_without = sum(without_values) / n if n else 0.0
    blended = (mean_without * n + baseline * PSEUDO_COUNT) / (n + PSEUDO_COUNT)
    return effective_with(with_values, tau) - blended


@dataclass(frozen=True, slots=True)
class GainUpdate:
    gain: float
    support: int
    status: str


def update_gain(
    old_gain: float,
    old_support: int,
    status: str,
    raw: float,
    new_support: int,
    *,
    ema_alpha: float = 0.4,
    min_support: int = 1,
    min_gain: float = 0.02,
    archive_gain: float = -0.05,
) -> GainUpdate:
    """EMA of the gain, added support, and candidate → active → archived (archived is terminal)."""
    gain = raw if old_support <= 0 else ema_alpha * raw + (1 - ema_alpha) * old_gain
    support = old_support + max(0, new_support)
    nxt = status
    if status == "candidate" and support >= min_support and gain >= min_gain:
        nxt = "active"
    elif status == "active" and (gain < archive_gain or support <= 0):
        nxt = "archived"
    return GainUpdate(gain=gain, support=support, status=nxt)
