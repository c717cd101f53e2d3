"""Evidence retrieval on the generated long-memory set: Stratamem's turn-start retrieval against
BM25-only and vector-only baselines run in the same process over the same captured turns."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import metrics
from bench.longmem import KINDS, LongMemSet
from bench.stats import percentile

AGENT = "bench"


def _ranked_trace_ids(result: Any) -> list[str]:
    out: list[str] = []
    for h in result.hits:
        rid = h.ref_id if h.ref_kind == "trace" else (h.source_trace_id or "")
        if rid and rid not in out:
            out.append(rid)
    return out


async def _ingest(core: Any, data: LongMemSet) -> dict[str, str]:
    """Every turn through turn_end (the real capture path); returns trace id -> turn key."""
    from stratamem.contract.dtos import Namespace, TurnResult

    key_of: dict[str, str] = {}
    for sess in data.sessions:
        ns = Namespace(agent_kind=AGENT, profile_id=sess.persona)
        for t in sess.turns:
            ack = await core.turn_end(
                TurnResult(
                    agent=AGENT,
                    session_id=sess.id,
                    agent_text=t.assistant,
                    ts=t.ts,
                    user_text=t.user,
                    namespace=ns,
                )
            )
            key_of[ack.trace_id] = t.key
    await core.flush(600)
    await core.store.optimize()
    await core.store.ensure_indexes()
    return key_of


async def _ask_all(
    core: Any, data: LongMemSet, key_of: dict[str, str], tag: str, tokens: Any
) -> dict[str, Any]:
    from stratamem.contract.dtos import Namespace, TurnInput

    out: dict[str, Any] = {}
    for q in data.questions:
        ns = Namespace(agent_kind=AGENT, profile_id=q.persona)
        t0 = time.perf_counter()
        res = await core.turn_start(
            TurnInput(
                agent=AGENT, session_id=f"{tag}-{q.id}", user_text=q.text, ts=q.ts, namespace=ns
            )
        )
        ms = (time.perf_counter() - t0) * 1000
        out[q.id] = {
            "ranked": [key_of.get(r, r) for r in _ranked_trace_ids(res)],
            "tokens": tokens.count(res.injected_context),
            "chars": len(res.injected_context),
            "ms": ms,
        }
    return out


async def _baselines(
    core: Any, data: LongMemSet, key_of: dict[str, str], embedder: Any
) -> dict[str, Any]:
    """BM25 over each persona's turns (user + assistant text) and cosine over the very vectors
    Stratamem stored for those turns (``vec_summary``), query embedded with the same model."""
    tbl = core.store.maintenance_table("traces", "bench.quality_baseline")
    rows = (
        await tbl.query()
        .select(["id", "owner_profile_id", "user_text", "agent_text", "vec_summary"])
        .to_list()
    )
    by_persona: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["id"] in key_of:
            by_persona.setdefault(r["owner_profile_id"], []).append(r)
    index: dict[str, tuple[list[str], metrics.Bm25, np.ndarray]] = {}
    for pid, rs in by_persona.items():
        rs.sort(key=lambda r: key_of[r["id"]])
        keys = [key_of[r["id"]] for r in rs]
        bm = metrics.Bm25([f"{r['user_text']}\n{r['agent_text']}" for r in rs])
        mat = np.asarray([r["vec_summary"] for r in rs], dtype=np.float32)
        index[pid] = (keys, bm, mat)
    out: dict[str, Any] = {"bm25": {}, "vector": {}}
    for q in data.questions:
        keys, bm, mat = index[q.persona]
        out["bm25"][q.id] = {"ranked": [keys[i] for i in bm.top(q.text, 10)]}
        qv = np.asarray(embedder.embed_query(q.text), dtype=np.float32)
        out["vector"][q.id] = {"ranked": [keys[i] for i in metrics.exact_topk(mat, qv, 10)]}
    return out


def _score(data: LongMemSet, runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per kind and system: recall@5, recall@10, MRR@10; abstention: share with nothing recalled."""
    table: dict[str, Any] = {}
    for kind in (*KINDS, "answerable"):
        qs = [
            q
            for q in data.questions
            if (q.kind == kind) or (kind == "answerable" and q.kind != "abstention")
        ]
        row: dict[str, Any] = {"n": len(qs)}
        for system, res in runs.items():
            ranked = [res[q.id]["ranked"] for q in qs]
            if kind == "abstention":
                row[system] = {"empty_rate": round(metrics.mean([float(not r) for r in ranked]), 3)}
                continue
            row[system] = {
                "recall@5": round(
                    metrics.mean(
                        [metrics.recall_at_k(r, q.gold, 5) for r, q in zip(ranked, qs, strict=True)]
                    ),
                    4,
                ),
                "recall@10": round(
                    metrics.mean(
                        [
                            metrics.recall_at_k(r, q.gold, 10)
                            for r, q in zip(ranked, qs, strict=True)
                        ]
                    ),
                    4,
                ),
                "mrr": round(
                    metrics.mean(
                        [
                            metrics.reciprocal_rank(r, q.gold, 10)
                            for r, q in zip(ranked, qs, strict=True)
                        ]
                    ),
                    4,
                ),
            }
        if kind == "knowledge_update":
            for system, res in runs.items():
                row[system]["trap_first"] = round(
                    metrics.mean([_trap_first(res[q.id]["ranked"], q) for q in qs]), 4
                )
        table[kind] = row
    return table


def _trap_first(ranked: list[str], q: Any) -> float:
    """1 when a superseded fact is recalled (top 10) above the current one (or without it)."""
    top = ranked[:10]
    traps = [top.index(t) for t in q.trap if t in top]
    if not traps:
        return 0.0
    golds = [top.index(g) for g in q.gold if g in top]
    return float(not golds or min(traps) < min(golds))


async def run_quality(
    embedder: Any, data: LongMemSet, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    from stratamem.core.engine.assemble import open_local_core

    overrides = overrides or {}
    tokens = metrics.TokenCounter()
    out: dict[str, Any] = {
        "seed": data.seed,
        "fingerprint": data.fingerprint()[:16],
        "turns": len(data.turns()),
        "sessions": len(data.sessions),
        "questions": len(data.questions),
        **data.meta,
    }
    with tempfile.TemporaryDirectory(prefix="bench-longmem-") as tmp:
        home = Path(tmp)
        core = await open_local_core(home, embedder=embedder, **overrides)
        try:
            t0 = time.perf_counter()
            key_of = await _ingest(core, data)
            out["ingest_s"] = round(time.perf_counter() - t0, 1)
            default = await _ask_all(core, data, key_of, "ask5", tokens)
            base = await _baselines(core, data, key_of, embedder)
        finally:
            await core.shutdown()
        # the same home again with 10 trace slots, so recall@10 is not capped by the default 5
        core = await open_local_core(
            home, embedder=embedder, retrieval__tier2_top_k=10, **overrides
        )
        try:
            wide = await _ask_all(core, data, key_of, "ask10", tokens)
        finally:
            await core.shutdown()
        # and the earlier tier-2 path (rank fusion), so a ranking change is judged in the same run
        core = await open_local_core(
            home,
            embedder=embedder,
            retrieval__tier2_top_k=10,
            **{"retrieval__trace_fusion": "rrf", **overrides},
        )
        try:
            before = await _ask_all(core, data, key_of, "ask10rrf", tokens)
        finally:
            await core.shutdown()
    runs = {
        "stratamem": wide,
        "stratamem_rank_fusion": before,
        "stratamem_default_k5": default,
        "bm25": base["bm25"],
        "vector": base["vector"],
    }
    out["by_kind"] = _score(data, runs)
    tok: dict[str, Any] = {}
    for kind in KINDS:
        vals = [default[q.id]["tokens"] for q in data.questions if q.kind == kind]
        tok[kind] = {
            "median": percentile(vals, 50),
            "p95": round(percentile(vals, 95), 1),
            "max": max(vals),
        }
    all_tok = [default[q.id]["tokens"] for q in data.questions]
    tok["all"] = {
        "median": percentile(all_tok, 50),
        "p95": round(percentile(all_tok, 95), 1),
        "max": max(all_tok),
    }
    out["injected_tokens_default_k5"] = tok
    out["turn_start_ms_default"] = {
        "median": round(percentile([v["ms"] for v in default.values()], 50), 2),
        "p95": round(percentile([v["ms"] for v in default.values()], 95), 2),
    }
    return out
