"""Reward back-propagation and priority (memos-core §5.3): how an episode's outcome reaches its steps.

Pure functions: ``V_T = R``, ``V_t = α_t·R + (1−α_t)·γ·V_{t+1}``; priority decays with a half-life.
"""

from __future__ import annotations

from collections.abc import Sequence

DAY_MS = 86_400_000


def clamp(x: float, lo: float = -1.0, hi: float = 1.0) -> float:
    return lo if x < lo else hi if x > hi else x


def backpropagate(reward: float, alphas: Sequence[float], gamma: float = 0.9) -> list[float]:
    """Values of the steps (chronological ``alphas``), walking from the last step to the first."""
    r = clamp(float(reward))
    g = clamp(float(gamma), 0.0, 1.0)
    values = [0.0] * len(alphas)
    nxt: float | None = None
    for i in range(len(alphas) - 1, -1, -1):
        a = clamp(float(alphas[i]), 0.0, 1.0)
        v = r if nxt is None else a * r + (1.0 - a) * g * nxt
        values[i] = clamp(v)
        nxt = values[i]
    return values


def priority(value: float, ts: int, now: int, half_life_days: float = 30.0) -> float:
    """``max(V, 0) · 0.5^(Δt_days / halfLife)`` (half-life at least one day)."""
    age_days = max(0.0, (now - ts) / DAY_MS)
    decay: float = 0.5 ** (age_days / max(1.0, float(half_life_days)))
    return max(float(value), 0.0) * decay
