"""Latency vs number of traces, the engine beside its baselines: a PNG next to the report.

Reads the ``scaling`` section of a report (each size's production phase: ANN at or above the
threshold, flat below), plots the median of every series on log-log axes. matplotlib is installed in
the bench environment only (``tox -e bench``), never by the default install; without it the plot is
skipped with a note. Regenerate from a saved report: ``python -m bench.plot REPORT.json [OUT.png]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.report import production_phase

PNG = "latency-vs-traces.png"
#: series drawn, in legend order: (latency key, label, engine?)
SERIES = (
    ("turn_start", "engine: turn_start (embed + route + tiers + render)", True),
    ("retrieval_no_embed", "engine: retrieval without the embed", True),
    ("vector_channel", "engine: vector channel", True),
    ("numpy_exact", "baseline: exact numpy cosine", False),
    ("lance_flat", "baseline: one LanceDB flat query", False),
    ("seed_bruteforce_sqlite", "baseline: seed design (brute-force cosine over SQLite)", False),
)


def points(res: dict[str, Any]) -> dict[str, list[tuple[int, float]]]:
    """label -> [(traces, median ms)] for every series present at two sizes or more."""
    sc = res.get("scaling") or {}
    thr = int(sc.get("ann_threshold_rows", 0))
    out: dict[str, list[tuple[int, float]]] = {}
    for size in sorted(sc.get("sizes") or [], key=lambda s: s["rows"]):
        _, phase = production_phase(size, thr)
        lat = phase.get("latency_ms") or {}
        for key, label, _engine in SERIES:
            if lat.get(key):
                out.setdefault(label, []).append((int(size["rows"]), float(lat[key]["median"])))
    return {k: v for k, v in out.items() if len(v) >= 2}


def write_plot(res: dict[str, Any], png: Path) -> Path | None:
    """Write the plot; ``None`` when matplotlib is missing or there is nothing to draw."""
    data = points(res)
    if not data:
        return None
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engine = {label for _, label, is_engine in SERIES if is_engine}
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    for label, pts in data.items():
        xs, ys = zip(*pts, strict=True)
        style = "-o" if label in engine else "--s"
        ax.plot(xs, ys, style, label=label, linewidth=2 if label in engine else 1.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("traces in the store")
    ax.set_ylabel("median latency per query (ms)")
    machine = res.get("machine") or {}
    when = machine.get("date_utc") or ""
    ax.set_title(f"Recall latency vs traces — size {res.get('size', '?')} {when}".strip())
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    plt.close(fig)
    return png


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m bench.plot REPORT.json [OUT.png]", file=sys.stderr)
        return 2
    report = Path(args[0])
    png = Path(args[1]) if len(args) > 1 else report.with_name(PNG)
    written = write_plot(json.loads(report.read_text(encoding="utf-8")), png)
    if written is None:
        print(
            "no plot: matplotlib is not installed or the report has no scaling sizes",
            file=sys.stderr,
        )
        return 1
    print(written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
