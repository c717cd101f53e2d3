"""The soak's verdicts: the whole RSS and RSS without the hot index's data are judged separately
against issue 16's bound, so data growth is never hidden as flat memory (nor the reverse)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.native import smaps_regions
from bench.soak import memory_summary, verdict_lines


def _curve(rss_per_turn: float, hot_per_turn: float) -> list[dict[str, float]]:
    return [
        {
            "turns": t,
            "rss_mb": 400 + rss_per_turn * t,
            "hot_mb": hot_per_turn * t,
            "lance_cache_mb": 5.0,
            "embed_cache_mb": 3.0,
        }
        for t in range(0, 10_001, 1000)
    ]


def test_hot_index_data_growth_misses_the_total_but_not_the_rest() -> None:
    mem = memory_summary(_curve(0.0034, 0.0033), warmup=2000)
    assert mem["rss_per_10k_mb"] == 34.0 and mem["hot_index_per_10k_mb"] == 33.0
    assert mem["rss_minus_hot_per_10k_mb"] == 1.0
    assert (mem["verdict_rss"], mem["verdict_rss_minus_hot"]) == ("missed", "met")
    total, rest = verdict_lines(mem)
    assert "total RSS" in total and total.endswith("MISSED")
    assert "minus the hot index's data" in rest and rest.endswith("MET")


def test_growth_outside_the_hot_index_misses_both() -> None:
    mem = memory_summary(_curve(0.003, 0.0), warmup=2000)
    assert (mem["verdict_rss"], mem["verdict_rss_minus_hot"]) == ("missed", "missed")


def test_readings_between_samples_enter_the_rss_slope_and_the_samples_alone_stay_beside() -> None:
    """Four RSS readings per sample: a sample that lands on a trough no longer sets the slope."""
    curve = _curve(0.0, 0.0)  # the full samples read a flat 400 MB
    # between them RSS climbs 2 MB per 1,000 turns; readings during the warm-up are not fitted
    between = [(t, 400 + 0.002 * t) for t in range(250, 10_000, 250) if t % 1000]
    mem = memory_summary(curve, warmup=2000, between=between)
    assert mem["rss_samples_per_10k_mb"] == 0.0
    assert mem["rss_readings"] == 9 + 24
    assert mem["rss_per_10k_mb"] > 10 and mem["verdict_rss"] == "missed"
    assert "33 readings; the full samples alone: +0.0" in verdict_lines(mem)[0]
    assert "rss_readings" not in memory_summary(curve, warmup=2000)


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="Linux /proc only")
def test_smaps_regions_add_up_to_this_process_rss() -> None:
    regions = smaps_regions()
    kinds = ("heap", "arenas", "stacks", "anon_big", "anon_small", "file")
    total = sum(regions[k] for k in kinds)
    rollup = Path("/proc/self/smaps_rollup").read_text().split("Rss:")[1].split()[0]
    assert abs(total - int(rollup) / 1024) < 0.05 * total + 2


def test_malloc_figures_follow_a_live_native_allocation() -> None:
    """glibc's counters (shared with the core's allocator module) see a 64 MB buffer come and go."""
    from bench.native import malloc_mb

    before = malloc_mb()
    if not before:
        pytest.skip("not glibc")
    buf = bytearray(64 << 20)
    during = malloc_mb()
    del buf
    after = malloc_mb()
    assert during["in_use"] + during["mmapped"] - before["in_use"] - before["mmapped"] >= 60
    assert after["in_use"] + after["mmapped"] < during["in_use"] + during["mmapped"] - 60
