"""One runner for every benchmark section: measures, then writes report.json and report.md."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench import machine
from bench.sizes import (
    ANN_PHASE_MIN_ROWS,
    DENSE_SAMPLE_ROWS,
    SECTIONS,
    SERVED_ONLY_MIN_ROWS,
    SIZES,
    Size,
)

ROOT = Path(__file__).resolve().parent.parent


def _log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--size", choices=sorted(SIZES), default="small")
    p.add_argument("--out", type=Path, default=ROOT / ".artifacts" / "bench")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma list of sections ({', '.join(SECTIONS)})"
    )
    p.add_argument("--rows", default="", help="override the scaling sizes, e.g. 10000,100000")
    p.add_argument(
        "--soak-cleanup-s",
        type=int,
        default=None,
        help="soak with storage.cleanup_older_than_s set to this (default: the shipped value)",
    )
    p.add_argument(
        "--soak-turns",
        type=int,
        default=None,
        help="soak this many turns instead of the size's (e.g. 20000: the steady state after the "
        "bounded caches fill)",
    )
    p.add_argument(
        "--locomo-data",
        type=Path,
        default=None,
        help="LoCoMo json (default: $STRATAMEM_LOCOMO or shared/data/locomo-dev.json beside the repo)",
    )
    p.add_argument(
        "--locomo-homes",
        type=Path,
        default=None,
        help="keep the LoCoMo homes here and reuse them when present (retrieval tuning only)",
    )
    p.add_argument(
        "--llm-url",
        default=None,
        help="OpenAI-compatible endpoint: LoCoMo also reports `+llm` rows with LLM query rewriting "
        "and the relevance filter on (else $STRATAMEM_BENCH_LLM_ENDPOINT)",
    )
    p.add_argument("--llm-model", default=None, help="model name for --llm-url")
    p.add_argument(
        "--llm-search-only",
        action="store_true",
        help="LoCoMo's LLM pass asks `search` only (no `turn_start+llm` row): half the LLM calls",
    )
    p.add_argument(
        "--locomo-every",
        type=int,
        default=1,
        help="LoCoMo asks every Nth question of each conversation (a deterministic subset for slow "
        "runs, e.g. a CPU LLM behind --llm-url; every row over the same questions)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override for the quality, LoCoMo, soak, scaling and capture homes, e.g. "
        "storage__hot_index=false (A/B a setting in one checkout); VALUE is JSON when it parses, "
        "else a string",
    )
    args = p.parse_args(argv)
    unknown = set(args.only.split(",")) - set(SECTIONS)
    if unknown:
        p.error(f"unknown sections: {', '.join(sorted(unknown))}")
    return args


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from stratamem.core.config.defaults import DEFAULTS
    from stratamem.core.embedding import load_embedder

    size: Size = SIZES[args.size]
    only = args.only.split(",")
    res: dict[str, Any] = {
        "overrides": config_overrides(args),
        "size": args.size,
        "seed": args.seed,
        "machine": machine.describe(ROOT),
    }
    notes: list[str] = []
    from stratamem.core.config.loader import overrides_to_tree

    # an uncached embedder: every query embedding in the figures is a real forward pass; the
    # provider and model ``--set embedding__...`` names (the homes are opened with this one)
    chosen = overrides_to_tree(config_overrides(args)).get("embedding", {})
    embedder = load_embedder({**chosen, "cache": {"enabled": False}})
    corpus = None
    if {"scaling", "grpc", "dense_sample"} & set(only):
        from bench.corpus import build_corpus

        corpus = build_corpus(embedder, args.seed)
    threshold = int(DEFAULTS["storage"]["ann_threshold_rows"])
    if "scaling" in only:
        from bench.scaling import run_size

        assert corpus is not None
        rows = tuple(int(x) for x in args.rows.split(",") if x) or size.scale_rows
        sizes = []
        for n in rows:
            _log(f"scaling: {n:,} traces")
            sizes.append(
                await run_size(
                    n,
                    corpus,
                    embedder,
                    size.queries,
                    size.warmup,
                    threshold,
                    ANN_PHASE_MIN_ROWS <= n < SERVED_ONLY_MIN_ROWS,
                    args.seed,
                    served_only=n >= SERVED_ONLY_MIN_ROWS,
                    overrides=config_overrides(args),
                )
            )
        res["scaling"] = {
            "ann_threshold_rows": threshold,
            "anchors": len(corpus.texts),
            "sizes": sizes,
        }
    if "dense_sample" in only:
        from bench.dense_sample import run_dense_sample

        assert corpus is not None
        n = int(args.rows.split(",")[0]) if args.rows else DENSE_SAMPLE_ROWS
        _log(f"dense_sample: {n:,} traces, LanceDB path")
        ds = await run_dense_sample(corpus, embedder, n, size.queries, size.warmup, args.seed)
        res["dense_sample"] = ds
        _log(
            "dense_sample: cached / per-query median ratio: sample stage "
            f"{ds['sample_stage_ratio_cached_vs_per_query']}, retrieval without the embed "
            f"{ds['retrieval_no_embed_ratio_cached_vs_per_query']}"
        )
    if "capture" in only:
        from bench.capture import run_capture

        _log("capture")
        res["capture"] = await run_capture(
            load_embedder(chosen),
            size.capture_paced,
            size.capture_burst,
            args.seed,
            config_overrides(args),
        )
    if "grpc" in only:
        from bench.grpc_overhead import run_grpc

        assert corpus is not None
        _log("grpc")
        res["grpc"] = await run_grpc(corpus, size.grpc_rows, size.grpc_calls, 10)
    if "soak" in only:
        from bench.soak import run_soak

        turns = args.soak_turns or size.soak_turns
        _log(f"soak: {turns:,} turns")
        overrides = config_overrides(args)
        if args.soak_cleanup_s is not None:
            overrides["storage__cleanup_older_than_s"] = args.soak_cleanup_s
        res["soak"] = await run_soak(
            load_embedder(chosen), turns, size.soak_every, args.seed, overrides
        )
        from bench.soak import verdict_lines

        for line in verdict_lines(res["soak"].get("memory") or {}):
            _log(line)
    if "quality" in only:
        from bench.longmem import generate
        from bench.quality import run_quality

        data = generate(
            args.seed, size.personas, size.sessions_per_persona, size.questions_per_kind
        )
        _log(f"quality: {len(data.turns())} turns, {len(data.questions)} questions")
        res["quality"] = await run_quality(embedder, data, config_overrides(args))
    if "locomo" in only:
        from bench.locomo import default_data_path, llm_overrides_from_env, run_locomo

        path = args.locomo_data or default_data_path(ROOT)
        _log(f"locomo: {path or 'data absent'}")
        res["locomo"] = await run_locomo(
            embedder,
            path,
            max_convs=size.locomo_convs,
            max_questions=size.locomo_questions,
            homes=args.locomo_homes,
            llm_overrides=llm_overrides_from_env(args.llm_url, args.llm_model),
            overrides=config_overrides(args),
            every=max(1, args.locomo_every),
            llm_turn_start=not args.llm_search_only,
        )
        if "skipped" in res["locomo"]:
            notes.append(res["locomo"]["skipped"])
    if "startup" in only:
        from bench.startup import run_startup

        small = args.size == "small"
        _log("startup: thin-client imports, fresh-process search, cold start, new Hermes process")
        res["startup"] = await asyncio.to_thread(run_startup, 3 if small else 10, 1 if small else 3)
    if "episodes" in only:
        from bench.episodes_paging import run_episodes_paging

        sizes = [2_000] if args.size == "small" else [10_000, 100_000]
        _log(f"episodes: listing pages, previous vs current, at {sizes} episodes")
        res["episodes"] = await run_episodes_paging(sizes)
    res["load_avg_end"] = machine.load_average()
    res["notes"] = notes
    return res


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in args.set:
        key, _, raw = item.partition("=")
        try:
            out[key.strip()] = json.loads(raw)
        except ValueError:
            out[key.strip()] = raw
    return out


def write(res: dict[str, Any], out: Path) -> tuple[Path, Path]:
    from bench.report import render

    out.mkdir(parents=True, exist_ok=True)
    j, m = out / "report.json", out / "report.md"
    j.write_text(json.dumps(res, indent=2, default=str) + "\n", encoding="utf-8")
    md = render(res)
    from bench.plot import PNG, write_plot

    if write_plot(res, out / PNG) is not None:
        md += f"\n## Latency vs traces\n\n![latency vs traces, engine and baselines]({PNG})\n"
    m.write_text(md, encoding="utf-8")
    return j, m


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LANCEDB_LOG", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = parse(argv)
    # the engine's malloc arena cap before pyarrow's and LanceDB's imports make arenas (the
    # `stratamem` command does the same: storage/allocator.py ``prepare_process``)
    from stratamem.core.config.defaults import DEFAULTS
    from stratamem.core.config.loader import overrides_to_tree
    from stratamem.core.storage import allocator

    given = overrides_to_tree(config_overrides(args)).get("storage", {})
    allocator.prepare_process({**DEFAULTS["storage"], **given})
    t0 = time.perf_counter()
    res = asyncio.run(run(args))
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    j, m = write(res, args.out)
    _log(f"done in {res['wall_s']} s: {j} and {m}")
    return 0
