"""The bench draws latency vs traces for the engine and its baselines next to its report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.plot import points, write_plot
from bench.runner import write


def _lat(ms: float) -> dict[str, float]:
    return {"median": ms, "p95": ms * 1.5, "min": ms * 0.8}


def _size(rows: int, scale: float) -> dict[str, Any]:
    lat = {
        "turn_start": _lat(20 * scale),
        "retrieval_no_embed": _lat(12 * scale),
        "numpy_exact": _lat(2 * scale),
        "lance_flat": _lat(15 * scale),
        "tier1_skills": _lat(3.0),
    }
    return {"rows": rows, "flat": {"latency_ms": lat}, "ann": {"latency_ms": lat}}


RES: dict[str, Any] = {
    "size": "small",
    "scaling": {"ann_threshold_rows": 50_000, "sizes": [_size(100_000, 4.0), _size(1_000, 1.0)]},
}


def test_every_series_is_a_median_per_size_in_rows_order() -> None:
    got = points(RES)
    assert got["engine: turn_start (embed + route + tiers + render)"] == [
        (1_000, 20.0),
        (100_000, 80.0),
    ]
    assert got["baseline: exact numpy cosine"] == [(1_000, 2.0), (100_000, 8.0)]
    assert not any("tier1" in label for label in got)  # stages inside the engine are not series


def test_the_report_links_a_png_written_next_to_it(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    saved = Path(__file__).resolve().parents[2] / "bench" / "results" / "standard.json"
    _, md = write(json.loads(saved.read_text(encoding="utf-8")), tmp_path)
    png = tmp_path / "latency-vs-traces.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "![latency vs traces, engine and baselines](latency-vs-traces.png)" in md.read_text()


def test_a_report_without_two_sizes_draws_nothing(tmp_path: Path) -> None:
    one = {"scaling": {"ann_threshold_rows": 10, "sizes": [_size(1_000, 1.0)]}}
    assert write_plot(one, tmp_path / "x.png") is None and not (tmp_path / "x.png").exists()
