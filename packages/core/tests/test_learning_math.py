"""The learning math (memos-core §5.3, §5.4, §5.6): back-propagation, priority decay, gain with
shrinkage and its status moves, and the η trial/thumb updates — properties and worked examples."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stratamem.core.learning.backprop import DAY_MS, backpropagate, priority
from stratamem.core.learning.eta import EtaState, apply_thumb, apply_trial, initial_eta
from stratamem.core.learning.gain import effective_with, raw_gain, update_gain

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
signed = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
anyfloat = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(
    anyfloat, st.lists(anyfloat, max_size=40), st.floats(min_value=-2, max_value=2, allow_nan=False)
)
def test_back_propagated_values_stay_in_minus_one_to_one(
    r: float, alphas: list[float], gamma: float
) -> None:
    values = backpropagate(r, alphas, gamma)
    assert len(values) == len(alphas)
    assert all(-1.0 <= v <= 1.0 for v in values)


def test_backprop_follows_the_recurrence_from_the_last_step() -> None:
    v = backpropagate(1.0, [0.5, 0.0, 0.3], 0.9)
    assert v[2] == 1.0  # V_T = R
    assert abs(v[1] - (0.0 * 1.0 + 1.0 * 0.9 * 1.0)) < 1e-9
    assert abs(v[0] - (0.5 * 1.0 + 0.5 * 0.9 * v[1])) < 1e-9
    assert backpropagate(-3.0, [1.0], 0.9) == [-1.0]  # R clamped


def test_priority_halves_every_half_life_and_ignores_negative_values() -> None:
    now = 100 * DAY_MS
    assert priority(0.8, now, now, 30) == 0.8
    assert abs(priority(0.8, now - 30 * DAY_MS, now, 30) - 0.4) < 1e-9
    assert priority(-0.5, now, now, 30) == 0.0


@given(
    st.lists(signed, min_size=1, max_size=12),
    st.lists(signed, max_size=12),
    st.integers(min_value=0, max_value=11),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_gain_is_monotone_in_the_with_set_values(
    with_v: list[float], without_v: list[float], idx: int, bump: float
) -> None:
    i = idx % len(with_v)
    higher = list(with_v)
    higher[i] = min(1.0, higher[i] + bump)
    # raising one with-value never lowers the gain
    assert effective_with(higher) >= effective_with(with_v) - 1e-9
    assert raw_gain(higher, without_v) >= raw_gain(with_v, without_v) - 1e-9


def test_the_soft_maximum_leans_to_the_best_outcomes() -> None:
    vals = [0.0, 1.0, 1.0]
    mean = sum(vals) / 3
    assert mean < effective_with(vals) < 1.0
    # the reference's softmax-weighted mean drops when its lowest value rises; ours does not
    assert effective_with([0.1, 1.0, 1.0]) > effective_with(vals)


@given(st.lists(signed, min_size=1, max_size=12), st.lists(signed, max_size=12))
def test_raising_every_with_value_raises_the_gain(
    with_v: list[float], without_v: list[float]
) -> None:
    up = [min(1.0, v + 0.1) for v in with_v]
    assert effective_with(up) >= effective_with(with_v) - 1e-9


def test_gain_uses_shrinkage_and_the_status_moves() -> None:
    g = raw_gain([0.9, 0.9, 0.9], [])
    assert abs(g - (0.9 - 0.5)) < 1e-9  # no without-set: the 0.5 baseline
    shrunk = raw_gain([0.9], [0.0])  # one poor without-trace is shrunk toward the 0.2 floor
    assert abs(shrunk - (0.9 - (0.0 * 1 + 0.2 * 5) / 6)) < 1e-9
    first = update_gain(0.0, 0, "candidate", 0.3, 3)
    assert first.gain == 0.3 and first.support == 3 and first.status == "active"
    ema = update_gain(0.3, 3, "active", -0.5, 1)
    assert abs(ema.gain - (0.4 * -0.5 + 0.6 * 0.3)) < 1e-9 and ema.status == "active"
    arch = update_gain(-0.04, 4, "active", -0.2, 0)
    assert arch.status == "archived"
    assert update_gain(0.5, 5, "archived", 0.9, 1).status == "archived"  # terminal


@given(
    st.floats(min_value=0, max_value=1, allow_nan=False),
    st.lists(st.booleans(), max_size=30),
    st.lists(st.booleans(), max_size=10),
)
def test_eta_stays_in_zero_one(eta: float, trials: list[bool], thumbs: list[bool]) -> None:
    s = EtaState(eta, 0, 0, "candidate")
    for ok in trials:
        s = apply_trial(s, ok)
        assert 0.0 <= s.eta <= 1.0 and s.passes <= s.attempts
    for up in thumbs:
        s = apply_thumb(s, up)
        assert 0.0 <= s.eta <= 1.0


def test_eta_update_is_anchored_at_the_current_eta() -> None:
    s = apply_trial(EtaState(0.5, 0, 0, "candidate"), True)
    assert s.eta == 0.75 and s.status == "active"
    s2 = apply_trial(s, True)
    assert abs(s2.eta - (0.5 + 2) / 3) < 1e-9
    low = apply_trial(EtaState(0.15, 0, 0, "candidate"), False)
    assert low.eta < 0.1 and low.status == "archived"
    back = apply_thumb(EtaState(0.05, 1, 0, "archived"), True)
    assert back.status == "candidate" and abs(back.eta - 0.15) < 1e-9
    assert initial_eta(0.4, 1) == 0.7 and initial_eta(-1.0, 0) == 0.1
