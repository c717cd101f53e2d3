"""L2 policy gain (memos-core §5.4 step 6): does following a policy beat not following it?

A soft maximum of the with-set against a shrunk mean of the without-set, then an EMA. Both parts
are monotone (raising a with-value never lowers the gain) — the reference's softmax-weighted mean
and its with-set-dependent baseline are not, so this port differs there on purpose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: pseudo-count of the shrinkage toward the baseline
PSEUDO_COUNT = 5


def effective_with(values: Sequence[float], tau: float = 0.5) -> float:
    """With ≥3 values the soft maximum ``τ·log(mean(exp(V/τ)))`` (between the mean and the max,
    leaning to the best outcomes like the reference's softmax weighting, but monotone); else the mean."""
    if not values:
        return 0.0
    if len(values) < 3:
        return sum(values) / len(values)
    top = max(values)
    t = max(1e-6, tau)
    lse = top + t * math.log(sum(math.exp((v - top) / t) for v in values) / len(values))
    return min(top, max(sum(values) / len(values), lse))


def raw_gain(
    with_values: Sequence[float],
    without_values: Sequence[float],
    tau: float = 0.5,
    pseudo_count: int = PSEUDO_COUNT,
) -> float:
    """``effectiveWith − (mean(without)·n + baseline·N₀)/(n + N₀)``; the baseline is the without-set's
    mean clamped to [0.2, 0.5] (0.5 when empty), so it never moves with the with-set."""
    n = len(without_values)
    mean_without = sum(without_values) / n if n else 0.0
    baseline = min(0.5, max(0.2, mean_without)) if n else 0.5
    blended = (mean_without * n + baseline * pseudo_count) / (n + pseudo_count)
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
