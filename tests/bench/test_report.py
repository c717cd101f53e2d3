"""The report states each target's verdict from the measured numbers."""

from __future__ import annotations

from bench.report import headline, render


def _lat(median: float, p95: float) -> dict[str, float]:
    return {"n": 20, "min": median / 2, "median": median, "p95": p95, "mean": median}


def _result(turn_start: float, no_embed: float, rows: int) -> dict[str, object]:
    phase = {
        "latency_ms": {
            "turn_start": _lat(turn_start, turn_start * 2),
            "retrieval_no_embed": _lat(no_embed, no_embed * 2),
            "numpy_exact": _lat(2.0, 3.0),
            "lance_flat": _lat(4.0, 6.0),
        },
        "recall_at_10_vs_exact": {"vector_channel": 1.0},
        "turn_start_with_hits": "20/20",
    }
    return {
        "size": "test",
        "machine": {
            "date_utc": "d",
            "host": "h",
            "cpu": "c",
            "cores": 2,
            "mem_gb": 1,
            "os": "o",
            "python": "3.11",
            "commit": "x",
            "load_avg_start": [1.0],
            "versions": {"lancedb": "0.40"},
        },
        "scaling": {
            "ann_threshold_rows": 50_000,
            "anchors": 8,
            "sizes": [{"rows": rows, "flat": phase, "load_s": 1, "fts_index_s": 1, "disk_mb": 1}],
        },
        "capture": {
            "paced": {"turns": 5, "ack_ms": _lat(2, 4), "ack_to_applied_ms": _lat(30, 40)},
            "burst": {
                "turns": 5,
                "ack_ms": _lat(2, 3),
                "acks_per_s": 1,
                "searchable_per_s": 1,
                "drain_after_last_ack_s": 1,
                "last_turn_found_by_search": True,
            },
            "read_your_writes": "x",
        },
        "quality": {
            "by_kind": {
                "answerable": {
                    "n": 3,
                    "stratamem": {"recall@5": 0.8, "recall@10": 0.9, "mrr": 0.7},
                    "stratamem_default_k5": {"recall@5": 0.8, "recall@10": 0.8, "mrr": 0.7},
                    "bm25": {"recall@5": 0.5, "recall@10": 0.6, "mrr": 0.4},
                    "vector": {"recall@5": 0.7, "recall@10": 0.85, "mrr": 0.6},
                }
            },
            "seed": 1,
            "fingerprint": "f",
            "personas": 1,
            "sessions": 1,
            "turns": 1,
            "questions": 3,
            "injected_tokens_default_k5": {"all": {"median": 10, "p95": 20, "max": 30}},
            "turn_start_ms_default": {"median": 1, "p95": 2},
        },
    }


def test_targets_at_100k_get_a_verdict_and_smaller_runs_say_n_a() -> None:
    rows, _ = headline(_result(20.0, 12.0, 100_000))
    by = {r["figure"]: r for r in rows}
    assert (
        by["turn-start recall p50 (embed + route + tiers + fuse + render)"]["verdict"] == "**met**"
    )
    assert by["retrieval without the embed p50"]["verdict"] == "**missed**"
    small, _ = headline(_result(20.0, 12.0, 10_000))
    assert small[0]["verdict"].startswith("n/a")


def test_recall_target_is_points_over_the_better_baseline() -> None:
    rows, nums = headline(_result(20.0, 8.0, 100_000))
    rec = next(r for r in rows if r["figure"].startswith("evidence recall@10"))
    assert nums["best_baseline"] == "vector"
    assert "+5.0 pts" in rec["value"] and rec["verdict"] == "**missed**"
    cap = next(r for r in rows if r["figure"].startswith("capture ack"))
    assert cap["verdict"] == "**met**"


def test_render_writes_every_section_present() -> None:
    md = render(_result(20.0, 8.0, 100_000))
    for heading in (
        "## Headline",
        "## Retrieval latency and scaling",
        "## Capture",
        "## Long-memory",
    ):
        assert heading in md
    assert "100,000 flat" in md


def test_hot_path_ratios_fixed_overhead_memory_and_flush_reads_get_verdicts() -> None:
    res = _result(20.0, 3.0, 1_000)
    sizes = res["scaling"]["sizes"]  # type: ignore[index]
    sizes[0]["flat"]["latency_ms"]["seed_bruteforce_sqlite"] = _lat(12.0, 14.0)
    sizes[0]["footprint"] = {
        "engine": {"VmHWM": 210.0, "VmRSS": 200.0, "p50_ms": 1.0},
        "seed_design": {"VmHWM": 35.0, "VmRSS": 35.0, "p50_ms": 1.2},
        "peak_ratio": 6.0,
    }
    small = {**sizes[0], "rows": 10, "footprint": None}
    small["flat"] = {**sizes[0]["flat"], "latency_ms": {"retrieval_no_embed": _lat(0.8, 1.0)}}
    sizes.insert(0, small)
    shape = {"fragments": 150, "version": 300}
    res["capture"]["flush_per_turn"] = {  # type: ignore[index]
        "turns": 150,
        "fragmented": {"table": shape, "search_ms": _lat(1.1, 2.0)},
        "optimized": {"table": {"fragments": 2}, "search_ms": _lat(1.0, 1.5)},
    }
    by = {r["figure"]: r for r in headline(res)[0]}
    fixed = by["fixed overhead: retrieval without the embed over 10 traces, p50"]
    assert fixed["verdict"] == "**met**" and fixed["value"] == "0.80 ms"
    numpy = by["retrieval without the embed / exact numpy, p50"]
    assert numpy["value"] == "1.50× at 1,000" and numpy["verdict"] == "**met**"
    seed = by["retrieval without the embed / the seed design (SQLite brute force), p50"]
    assert seed["value"] == "0.25× at 1,000" and seed["verdict"] == "**met**"
    mem = by["peak memory, engine / seed design at 1,000 traces"]
    assert mem["verdict"].startswith("**missed** vs the Python seed design")
    assert mem["verdict"].endswith("**met** vs the plugin")  # 210 MB vs 180 MiB
    flush = by["search after a flush per turn / after optimize (p50)"]
    assert flush["verdict"] == "**met**"
    assert "peak RSS engine / seed design" in render(res)


def test_capture_and_grpc_floors_are_reported_beside_the_figures() -> None:
    res = _result(20.0, 8.0, 100_000)
    cap = res["capture"]  # type: ignore[index]
    for phase in ("paced", "burst"):
        cap[phase]["bare_commit_ms"] = _lat(1.5, 3.5)
        cap[phase]["ack_minus_bare_ms"] = {"p50": 0.5, "p95": 0.5}
    grpc: dict[str, object] = {
        "rows": 10_000,
        "query": "q",
        "iterations": 400,
        "interleaved": True,
        "reply_bytes": 4000,
        "in_process": {
            "search": _lat(3.0, 5.0),
            "turn_start": _lat(9.0, 12.0),
            "health": _lat(0.4, 0.6),
        },
        "bare_grpc_ms": {"unix_socket": _lat(0.4, 0.7), "tcp_loopback": _lat(0.5, 0.8)},
        "overhead_ms": {},
    }
    for name in ("unix_socket", "tcp_loopback", "unix_socket_no_file_logs"):
        grpc[name] = {
            "search": _lat(3.8, 5.9),
            "turn_start": _lat(9.8, 14.0),
            "health": _lat(1.0, 1.3),
        }
        grpc["overhead_ms"][name] = {  # type: ignore[index]
            "search": {"p50": 0.8, "p95": 0.9},
            "turn_start": {"p50": 0.8, "p95": 1.2 if name == "tcp_loopback" else 0.9},
            "health": {"p50": 0.6, "p95": 0.7},
        }
    res["grpc"] = grpc
    by = {r["figure"]: r for r in headline(res)[0]}
    assert "bare fsync'd SQLite commit" in by["capture ack (turn_end, journal) p50 / p95"]["note"]
    g = by["gRPC overhead p95 (Unix socket / TCP loopback)"]
    # the worst of search and turn_start over both transports decides
    assert g["verdict"] == "**missed**" and "bare grpcio unary" in g["note"]
    assert g["value"] == "search 0.90 / 0.90 ms; turn_start 0.90 / 1.20 ms"
    md = render(res)
    assert "ack minus bare commit (paced) p50 / p95 | 0.50 / 0.50 ms" in md
    assert "bare grpcio unary, unix socket | 0.40 / 0.70 (0.20)" in md
    assert "turn_start overhead p50 / p95" in md
    assert "unix socket no file logs" in md


def test_recall_beside_a_burst_is_reported_for_a_second_home_and_a_second_tenant() -> None:
    res = _result(10.0, 5.0, 1000)
    assert "another namespace of the burst's own home" not in render(res)  # an older report: no row

    def phases(idle: float, during: float) -> dict[str, object]:
        return {
            "turn_start_idle_ms": _lat(idle, idle * 2),
            "turn_start_during_burst_ms": _lat(during, during * 2),
            "ratio_p50": round(during / idle, 2),
            "ratio_p95": round(during / idle, 2),
        }

    res["capture"]["recall_under_burst"] = {  # type: ignore[index]
        "burst_turns": 400,
        **phases(30.0, 45.0),
        "same_home_other_namespace": phases(25.0, 4050.0),
        "drain_s": 6.0,
    }
    md = render(res)
    assert "turn_start on a second home while a 400-turn burst drains (p50 ×1.5)" in md
    assert "turn_start in another namespace of the burst's own home (p50 ×162.0)" in md
    assert "idle 25.0 / 50.0 (12.5) · during 4050 / 8100 (2025)" in md
