"""Skill reliability η (memos-core §5.6): initial value, trial updates, thumbs, and the status it implies.

The trial update is the code's prior-strength-1 update anchored at the current η (not Beta(1,1)).
"""

from __future__ import annotations

from dataclasses import dataclass


def _c01(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def initial_eta(gain: float, support: int, min_support: int = 1) -> float:
    return max(0.1, 0.5 * _c01(gain) + 0.5 * min(1.0, support / max(1, min_support)))


@dataclass(frozen=True, slots=True)
class EtaState:
    eta: float
    attempts: int
    passes: int
    status: str


def trial_outcome(reward: float, pass_at: float = 0.5, fail_at: float = -0.5) -> str:
    """R ≥ 0.5 passes, R ≤ −0.5 fails, anything between is unknown (no η change)."""
    if reward >= pass_at:
        return "pass"
    if reward <= fail_at:
        return "fail"
    return "unknown"


def apply_trial(
    state: EtaState,
    passed: bool,
    *,
    candidate_trials: int = 1,
    archive_eta: float = 0.1,
) -> EtaState:
    prior = _c01(state.eta * (1 + state.attempts) - state.passes)
    attempts = state.attempts + 1
    passes = state.passes + (1 if passed else 0)
    eta = _c01((prior + passes) / (1 + attempts))
    status = state.status
    if status == "candidate" and attempts >= candidate_trials:
        status = "active" if eta >= archive_eta else "archived"
    elif status == "active" and eta < archive_eta:
        status = "archived"
    return EtaState(eta=eta, attempts=attempts, passes=passes, status=status)


def apply_thumb(
    state: EtaState, up: bool, delta: float = 0.1, archive_eta: float = 0.1
) -> EtaState:
    eta = _c01(state.eta + (delta if up else -delta))
    status = state.status
    if status == "archived" and eta >= archive_eta:
        status = "candidate"
    elif status != "archived" and eta < archive_eta:
        status = "archived"
    return EtaState(eta=eta, attempts=state.attempts, passes=state.passes, status=status)
