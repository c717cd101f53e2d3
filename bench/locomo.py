"""LoCoMo retrieval quality: Stratamem's ``search`` and ``turn_start`` beside BM25-only, vector-only
and plain-RRF baselines over the same memories, in the same run.

The data (a development split of LoCoMo, CC BY-NC 4.0) is read from the shared folder beside the
repository and never copied into a package. The metric is the one in ``shared/data/README.md``: one
memory per pair of consecutive turns of a session, each conversation in its own namespace, captured
through ``turn_end`` the way a host sends turns (``"Speaker: text"``, a shared photo as its caption,
the session's date as the turn's timestamp); every question of categories 1-4 whose evidence names
existing turns is asked with top k = 10. R@k = every evidence memory in the top k; hit@k = any;
MRR@10 over the first evidence hit. Category 5 (adversarial, no answer) gives the abstention rate.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import metrics
from bench.llm_calls import TimedLlm
from bench.llm_calls import render as render_calls
from bench.llm_calls import summarise as summarise_calls
from bench.stats import percentile

AGENT = "locomo"
CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop"}
ADVERSARIAL = 5
K = 10
_DIA = re.compile(r"D(\d+):(\d+)")
_DATE_FMT = "%I:%M %p on %d %B, %Y"
SYSTEMS = ("search", "turn_start", "bm25", "vector", "rrf")
#: ``search`` again with the earlier tier-2 path, in the same run over the same homes
VARIANTS: dict[str, dict[str, Any]] = {
    "search (rank fusion, before)": {"retrieval__trace_fusion": "rrf"},
    # the relevance floor (shipped off): what it abstains on category 5 and what it costs
    "search (floor 0.3)": {"retrieval__relevance_floor_cosine": 0.3},
    "search (floor 0.4)": {"retrieval__relevance_floor_cosine": 0.4},
}


def default_data_path(root: Path) -> Path | None:
    """``$STRATAMEM_LOCOMO`` or ``shared/data/locomo-dev.json`` beside the repository (or its parent)."""
    env = os.environ.get("STRATAMEM_LOCOMO")
    if env:
        return Path(env)
    for base in (root.parent, root.parent.parent):
        p = base / "shared" / "data" / "locomo-dev.json"
        if p.is_file():
            return p
    return None


@dataclass(frozen=True, slots=True)
class Memory:
    key: str  # "<conv>#<n>"
    session: int
    ts: int
    user_text: str
    agent_text: str
    dia_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    conv: str
    text: str
    category: int
    gold: tuple[str, ...]  # memory keys (empty for category 5)


@dataclass
class Conversation:
    id: str
    memories: list[Memory] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    sessions: int = 0

    @property
    def ask_ts(self) -> int:
        """A day after the last session: questions are asked once the conversation is over."""
        return max(m.ts for m in self.memories) + 86_400_000


def _turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text") or "").strip()
    cap = str(turn.get("blip_caption") or "").strip()
    if cap:
        text = f"{text} [shares a photo: {cap}]".strip()
    return f"{turn['speaker']}: {text}"


def _session_ts(value: str) -> int:
    return int(dt.datetime.strptime(value, _DATE_FMT).replace(tzinfo=dt.UTC).timestamp() * 1000)


def parse_conversation(raw: dict[str, Any]) -> Conversation:
    conv_id = str(raw.get("sample_id") or "conv")
    c = raw["conversation"]
    out = Conversation(conv_id)
    memory_of: dict[str, str] = {}
    numbers = sorted(
        int(k.split("_")[1])
        for k, v in c.items()
        if re.fullmatch(r"session_\d+", k) and isinstance(v, list) and v
    )
    out.sessions = len(numbers)
    for n in numbers:
        ts = _session_ts(c[f"session_{n}_date_time"])
        turns = c[f"session_{n}"]
        for i in range(0, len(turns), 2):
            pair = turns[i : i + 2]
            key = f"{conv_id}#{len(out.memories)}"
            user = _turn_text(pair[0])
            agent = _turn_text(pair[1]) if len(pair) > 1 else ""
            ids = tuple(str(t["dia_id"]) for t in pair)
            out.memories.append(Memory(key, n, ts, user, agent, ids))
            for d in ids:
                memory_of[d] = key
    for i, qa in enumerate(raw.get("qa", [])):
        cat = int(qa["category"])
        if cat not in CATEGORIES and cat != ADVERSARIAL:
            continue
        ev = [f"D{a}:{b}" for e in qa.get("evidence", []) for a, b in _DIA.findall(str(e))]
        gold = tuple(dict.fromkeys(memory_of[e] for e in ev if e in memory_of))
        if cat != ADVERSARIAL and not gold:
            continue  # evidence names no existing turn: not part of the metric
        out.questions.append(Question(f"{conv_id}/q{i}", conv_id, str(qa["question"]), cat, gold))
    return out


def load(path: Path) -> list[Conversation]:
    return [parse_conversation(r) for r in json.loads(path.read_text(encoding="utf-8"))]


def _ns(conv: str) -> Any:
    from stratamem.contract.dtos import Namespace

    return Namespace(agent_kind=AGENT, profile_id=conv.replace("#", "-"))


async def ingest(core: Any, conv: Conversation) -> dict[str, str]:
    """Every memory through ``turn_end``; returns trace id -> memory key."""
    from stratamem.contract.dtos import TurnResult

    key_of: dict[str, str] = {}
    ns = _ns(conv.id)
    for m in conv.memories:
        ack = await core.turn_end(
            TurnResult(
                agent=AGENT,
                session_id=f"{conv.id}-s{m.session}",
                agent_text=m.agent_text,
                ts=m.ts,
                user_text=m.user_text,
                namespace=ns,
                turn_key=m.key,
            )
        )
        key_of[ack.trace_id] = m.key
    return key_of


def ranked_keys(result: Any, key_of: dict[str, str]) -> list[str]:
    out: list[str] = []
    for h in result.hits:
        rid = h.ref_id if h.ref_kind == "trace" else (h.source_trace_id or "")
        key = key_of.get(rid)
        if key and key not in out:
            out.append(key)
    return out


async def ask(
    core: Any,
    conv: Conversation,
    questions: Sequence[Question],
    key_of: dict[str, str],
    tok: Any,
    *,
    turn: bool = True,
) -> dict[str, dict[str, Any]]:
    from stratamem.contract.dtos import RetrievalQuery, TopK, TurnInput

    ns = _ns(conv.id)
    out: dict[str, dict[str, Any]] = {"search": {}, "turn_start": {}}
    for q in questions:
        t0 = time.perf_counter()
        res = await core.search(
            RetrievalQuery(
                agent=AGENT,
                query=q.text,
                namespace=ns,
                session_id=f"ask-{q.id}",
                top_k=TopK(tier1=0, tier2=K, tier3=0),
            )
        )
        ms = (time.perf_counter() - t0) * 1000
        out["search"][q.id] = {
            "ranked": ranked_keys(res, key_of),
            "ms": ms,
            "hits": len(res.hits),
            "cut_off": res.cut_off,
        }
        if not turn:
            continue
        t0 = time.perf_counter()
        res = await core.turn_start(
            TurnInput(
                agent=AGENT,
                session_id=f"ask-{q.id}",
                user_text=q.text,
                ts=conv.ask_ts,
                namespace=ns,
            )
        )
        ms = (time.perf_counter() - t0) * 1000
        out["turn_start"][q.id] = {
            "ranked": ranked_keys(res, key_of),
            "ms": ms,
            "tokens": tok.count(res.injected_context),
            "hits": len(res.hits),
            "cut_off": res.cut_off,
        }
    return out


async def baselines(
    core: Any,
    conv: Conversation,
    questions: Sequence[Question],
    key_of: dict[str, str],
    embedder: Any,
) -> dict[str, dict[str, Any]]:
    """BM25 over each memory's text, cosine over the very vectors Stratamem stored (``vec_summary``),
    and plain RRF (k = 60) of the two; the query embedded with the same model, timed per question."""
    rows = (
        await core.store.maintenance_table("traces", "bench.locomo_baseline")
        .query()
        .select(["id", "user_text", "agent_text", "vec_summary"])
        .to_list()
    )
    rows = sorted(
        (r for r in rows if r["id"] in key_of), key=lambda r: int(key_of[r["id"]].split("#")[1])
    )
    keys = [key_of[r["id"]] for r in rows]
    bm = metrics.Bm25([f"{r['user_text']}\n{r['agent_text']}" for r in rows])
    mat = np.asarray([r["vec_summary"] for r in rows], dtype=np.float32)
    out: dict[str, dict[str, Any]] = {"bm25": {}, "vector": {}, "rrf": {}}
    for q in questions:
        t0 = time.perf_counter()
        b = bm.top(q.text, 50)
        t1 = time.perf_counter()
        qv = np.asarray(embedder.embed_query(q.text), dtype=np.float32)
        v = [int(i) for i in metrics.exact_topk(mat, qv, 50)]
        t2 = time.perf_counter()
        fused: dict[int, float] = {}
        for lst in (b, v):
            for r, i in enumerate(lst):
                fused[i] = fused.get(i, 0.0) + 1.0 / (60 + r + 1)
        rrf = sorted(fused, key=lambda i: (-fused[i], i))[:K]
        t3 = time.perf_counter()
        out["bm25"][q.id] = {"ranked": [keys[i] for i in b[:K]], "ms": (t1 - t0) * 1000}
        out["vector"][q.id] = {"ranked": [keys[i] for i in v[:K]], "ms": (t2 - t1) * 1000}
        out["rrf"][q.id] = {"ranked": [keys[i] for i in rrf], "ms": (t3 - t0) * 1000}
    return out


def _r(x: float) -> float:
    return round(x, 4) if not math.isnan(x) else x


def rankings_digest(res: dict[str, Any]) -> str:
    """12 hex digits over every question's ranked memories: two runs that print the same digest
    ranked every question alike (two ingests of the same turns must; session 23 found they did
    not)."""
    h = hashlib.sha256()
    for qid in sorted(res):
        h.update(f"{qid}\t{','.join(res[qid]['ranked'])}\n".encode())
    return h.hexdigest()[:12]


def score(questions: Sequence[Question], runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per system: overall and per category R@5, R@10, hit@10, MRR@10; latency; abstention."""
    answerable = [q for q in questions if q.category in CATEGORIES]
    adversarial = [q for q in questions if q.category == ADVERSARIAL]
    out: dict[str, Any] = {}
    for system, res in runs.items():
        row: dict[str, Any] = {}
        groups = {"all": answerable} | {
            name: [q for q in answerable if q.category == c] for c, name in CATEGORIES.items()
        }
        for name, qs in groups.items():
            if not qs:
                continue
            ranked = [res[q.id]["ranked"] for q in qs]
            pairs = list(zip(ranked, qs, strict=True))
            row[name] = {
                "n": len(qs),
                "R@5": _r(metrics.mean([float(set(q.gold) <= set(r[:5])) for r, q in pairs])),
                "R@10": _r(metrics.mean([float(set(q.gold) <= set(r[:K])) for r, q in pairs])),
                "hit@10": _r(
                    metrics.mean([float(bool(set(q.gold) & set(r[:K]))) for r, q in pairs])
                ),
                "MRR@10": _r(
                    metrics.mean([metrics.reciprocal_rank(r, q.gold, K) for r, q in pairs])
                ),
            }
        ms = [res[q.id]["ms"] for q in answerable if "ms" in res[q.id]]
        if ms:
            row["ms"] = {"p50": round(percentile(ms, 50), 2), "p95": round(percentile(ms, 95), 2)}
        toks = [res[q.id]["tokens"] for q in answerable if "tokens" in res[q.id]]
        if toks:
            row["tokens"] = {
                "median": percentile(toks, 50),
                "p95": round(percentile(toks, 95), 1),
                "max": max(toks),
            }
        hits = [res[q.id]["hits"] for q in answerable if "hits" in res[q.id]]
        if hits:
            row["hits_mean"] = _r(metrics.mean([float(h) for h in hits]))
            row["cut_off_rate"] = _r(
                metrics.mean([float(bool(res[q.id].get("cut_off"))) for q in answerable])
            )
        row["empty_on_answerable"] = _r(
            metrics.mean([float(not res[q.id]["ranked"]) for q in answerable])
        )
        row["digest"] = rankings_digest(res)
        adv = [q for q in adversarial if q.id in res]
        if adv:
            row["abstention_cat5"] = _r(metrics.mean([float(not res[q.id]["ranked"]) for q in adv]))
        out[system] = row
    return out


def pick(
    convs: list[Conversation], max_convs: int, max_questions: int, every: int = 1
) -> list[Conversation]:
    """The first ``max_convs`` conversations, each with its first ``max_questions`` questions per
    category (0 = all): the smoke size keeps every category. ``every`` > 1 keeps each
    conversation's 1st, (1 + every)th, ... question in file order first (a deterministic subset
    for slow runs, e.g. a CPU LLM)."""
    chosen = convs[:max_convs] if max_convs else convs
    if every > 1:
        for c in chosen:
            c.questions = c.questions[::every]
    if not max_questions:
        return chosen
    for c in chosen:
        seen: dict[int, int] = {}
        keep = []
        for q in c.questions:
            if seen.get(q.category, 0) < max_questions:
                seen[q.category] = seen.get(q.category, 0) + 1
                keep.append(q)
        c.questions = keep
    return chosen


async def run_locomo(
    embedder: Any,
    path: Path | None,
    *,
    max_convs: int = 0,
    max_questions: int = 0,
    overrides: dict[str, Any] | None = None,
    llm_overrides: dict[str, Any] | None = None,
    homes: Path | None = None,
    every: int = 1,
    llm_turn_start: bool = True,
) -> dict[str, Any]:
    """The whole section; ``{"skipped": reason}`` when the data is absent. ``homes`` keeps each
    conversation's home there and reuses it when already ingested (for tuning retrieval only)."""
    if path is None or not await asyncio.to_thread(path.is_file):
        return {"skipped": f"LoCoMo data not found ({path or 'shared/data/locomo-dev.json'})"}
    from stratamem.core.engine.assemble import open_local_core

    convs = pick(await asyncio.to_thread(load, path), max_convs, max_questions, every)
    tok = metrics.TokenCounter()
    runs: dict[str, dict[str, Any]] = {s: {} for s in (*SYSTEMS, *VARIANTS)}
    llm_runs: dict[str, dict[str, Any]] = {}
    llm_log: list[dict[str, Any]] = []
    questions: list[Question] = []
    ingest_s = 0.0
    for conv in convs:
        with tempfile.TemporaryDirectory(prefix="bench-locomo-") as tmp:
            home = homes / conv.id if homes is not None else Path(tmp)
            saved = home / "locomo-keys.json"
            core = await open_local_core(home, embedder=embedder, **(overrides or {}))
            try:
                t0 = time.perf_counter()
                if homes is not None and await asyncio.to_thread(saved.is_file):
                    key_of = json.loads(await asyncio.to_thread(saved.read_text))
                else:
                    key_of = await ingest(core, conv)
                    await core.flush(600)
                    await core.store.optimize()
                    await core.store.ensure_indexes()
                    await asyncio.to_thread(saved.write_text, json.dumps(key_of))
                ingest_s += time.perf_counter() - t0
            finally:
                await core.shutdown()
            # every pass asks a reopened, quiet home (not one still finishing the ingest's work)
            core = await open_local_core(home, embedder=embedder, **(overrides or {}))
            try:
                got = await ask(core, conv, conv.questions, key_of, tok)
                got |= await baselines(core, conv, conv.questions, key_of, embedder)
            finally:
                await core.shutdown()
            for name, extra in VARIANTS.items():
                core = await open_local_core(home, embedder=embedder, **(overrides or {}), **extra)
                try:
                    got[name] = (await ask(core, conv, conv.questions, key_of, tok, turn=False))[
                        "search"
                    ]
                finally:
                    await core.shutdown()
            if llm_overrides is not None:
                # ``--set`` wins over the LLM rows' own settings (e.g. one LLM path off)
                core = await open_local_core(
                    home, embedder=embedder, **{**llm_overrides, **(overrides or {})}
                )
                if core.llm is not None:  # every call the LLM rows make, timed at the provider
                    core.llm = TimedLlm(core.llm, llm_log)
                try:
                    got_llm = await ask(
                        core, conv, conv.questions, key_of, tok, turn=llm_turn_start
                    )
                    for s, r in got_llm.items():
                        if not r:  # turn_start not asked (llm_turn_start=False)
                            continue
                        llm_runs.setdefault(f"{s}+llm", {}).update(r)
                finally:
                    await core.shutdown()
        for s, r in got.items():
            runs[s].update(r)
        questions.extend(conv.questions)
    notes = []
    if llm_overrides is None:
        notes.append(
            "LLM paths: not measured (no `--llm-url` / STRATAMEM_BENCH_LLM_ENDPOINT). With an "
            "OpenAI-compatible LLM configured, `search+llm` / `turn_start+llm` run the same "
            "questions with LLM query rewriting and the LLM relevance filter on; offline defaults "
            "stay the figure that counts."
        )
    else:
        eff = {**llm_overrides, **(overrides or {})}
        on = [
            name
            for name, key in (
                ("LLM query rewriting", "retrieval__llm_query_rewrite"),
                ("the LLM relevance filter", "retrieval__llm_filter_enabled"),
            )
            if eff.get(key, True)
        ]
        notes.append(
            f"LLM paths: `+llm` rows ran with {' and '.join(on) or 'no LLM path'} on, "
            f"against {llm_overrides.get('llm__endpoint')}, model "
            f"`{llm_overrides.get('llm__model')}` (against a scripted stub they measure plumbing, "
            "not quality)."
        )
    out: dict[str, Any] = {
        "notes": notes,
        "data": path.name,
        "conversations": [c.id for c in convs],
        "memories": sum(len(c.memories) for c in convs),
        "questions": sum(1 for q in questions if q.category in CATEGORIES),
        "adversarial": sum(1 for q in questions if q.category == ADVERSARIAL),
        "ingest_s": round(ingest_s, 1),
        "every": every,
        "systems": score(questions, runs | llm_runs),
        "halves": halves(convs, questions, runs),
    }
    if llm_overrides is not None:
        out["llm_calls"] = summarise_calls(llm_log)
    return out


#: tune on the first conversations, confirm on the rest: a change that only helps where it was
#: tuned shows up as a gap between the halves (the held-back conversations decide in the end)
TUNE_CONVS = 3


def halves(
    convs: Sequence[Conversation], questions: Sequence[Question], runs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """``search`` and ``turn_start`` scored on the tuning conversations and on the others."""
    ids = [c.id for c in convs]
    if len(ids) <= TUNE_CONVS:
        return {}
    parts = {
        f"tune ({', '.join(ids[:TUNE_CONVS])})": set(ids[:TUNE_CONVS]),
        f"confirm ({', '.join(ids[TUNE_CONVS:])})": set(ids[TUNE_CONVS:]),
    }
    picked: dict[str, dict[str, Any]] = {s: runs[s] for s in ("search", "turn_start") if s in runs}
    return {
        name: score([q for q in questions if q.conv in sel], picked) for name, sel in parts.items()
    }


def llm_overrides_from_env(
    url: str | None = None, model: str | None = None
) -> dict[str, Any] | None:
    """The LLM paths' config (query rewriting and the relevance filter on) for ``url`` (the
    ``--llm-url`` switch), else ``STRATAMEM_BENCH_LLM_ENDPOINT`` / ``_MODEL`` / ``_API_KEY`` (any
    OpenAI-compatible server); None when neither names an endpoint."""
    endpoint = url or os.environ.get("STRATAMEM_BENCH_LLM_ENDPOINT", "")
    if not endpoint:
        return None
    return {
        "llm__provider": "openai_compatible",
        "llm__endpoint": endpoint,
        "llm__model": model or os.environ.get("STRATAMEM_BENCH_LLM_MODEL", "") or "default",
        "llm__api_key": os.environ.get("STRATAMEM_BENCH_LLM_API_KEY", ""),
        "llm__fallback_to_host": False,
        "retrieval__llm_query_rewrite": True,
        "retrieval__llm_filter_enabled": True,
    }


TARGETS = {"R@10": 0.75, "hit@10": 0.88, "MRR@10": 0.60, "multi_hop R@10": 0.35, "tokens p95": 2000}


def verdicts(res: dict[str, Any], system: str = "search") -> dict[str, dict[str, Any]]:
    s = res["systems"][system]
    tokens = res["systems"]["turn_start"].get("tokens", {}).get("p95", math.nan)
    got = {
        "R@10": s["all"]["R@10"],
        "hit@10": s["all"]["hit@10"],
        "MRR@10": s["all"]["MRR@10"],
        "multi_hop R@10": s.get("multi_hop", {}).get("R@10", math.nan),
        "tokens p95": tokens,
    }
    return {
        k: {"target": t, "got": got[k], "ok": (got[k] <= t) if k == "tokens p95" else (got[k] >= t)}
        for k, t in TARGETS.items()
    }


def _f(x: Any) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def render(res: dict[str, Any]) -> str:
    """The LoCoMo section of the report (markdown)."""
    if "skipped" in res:
        return f"## LoCoMo\n\nSkipped: {res['skipped']}.\n"
    lines = [
        "## LoCoMo retrieval quality",
        "",
        f"{len(res['conversations'])} conversations ({', '.join(res['conversations'])}), "
        f"{res['memories']} memories (one per pair of consecutive turns), {res['questions']} "
        f"questions of categories 1-4 and {res['adversarial']} adversarial (category 5); top k = {K}; "
        f"ingest {res['ingest_s']} s. `search` asks with top k 10 traces; `turn_start` runs with the "
        "shipped defaults (its trace cap). Baselines run over the same stored memories in the same run."
        + (
            f" Subset: every {res['every']}th question of each conversation (all rows alike)."
            if res.get("every", 1) > 1
            else ""
        ),
        "",
        "| method | R@5 | R@10 | hit@10 | MRR@10 | multi-hop R@10 | temporal R@10 | open-domain R@10 "
        "| single-hop R@10 | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in res["systems"].items():
        a = s["all"]
        cats = [_f(s.get(c, {}).get("R@10")) for c in CATEGORIES.values()]
        ms = s.get("ms", {})
        lines.append(
            f"| {name} | {_f(a['R@5'])} | {_f(a['R@10'])} | {_f(a['hit@10'])} | {_f(a['MRR@10'])} | "
            + " | ".join(cats)
            + f" | {ms.get('p50', '–')} | {ms.get('p95', '–')} |"
        )
    digests = ", ".join(
        f"{name} `{s['digest']}`" for name, s in res["systems"].items() if s.get("digest")
    )
    lines += [
        "",
        f"Rankings digest (every question's ranked memories): {digests}. Another run over the "
        "same data that prints the same digest ranked every question alike.",
        "",
        "| method | injected tokens median / p95 / max | empty on answerable | abstention (cat 5) |",
    ]
    lines.append("|---|---|---|---|")
    for name, s in res["systems"].items():
        if "tokens" in s or name.startswith("search"):
            t = s.get("tokens")
            size = f"{t['median']} / {t['p95']} / {t['max']}" if t else "–"
            lines.append(
                f"| {name} | {size} | "
                f"{_f(s.get('empty_on_answerable'))} | {_f(s.get('abstention_cat5'))} |"
            )
    if res.get("halves"):
        lines += [
            "",
            "| conversations | method | n | R@10 | hit@10 | MRR@10 | multi-hop R@10 |",
            "|---|---|---|---|---|---|---|",
        ]
        for part, systems in res["halves"].items():
            for name, s in systems.items():
                a = s["all"]
                mh = s.get("multi_hop", {}).get("R@10")
                lines.append(
                    f"| {part} | {name} | {a['n']} | {_f(a['R@10'])} | {_f(a['hit@10'])} | "
                    f"{_f(a['MRR@10'])} | {_f(mh)} |"
                )
    if "search" in res["systems"] and "all" in res["systems"]["search"]:
        lines += [
            "",
            "| target (shipped defaults, `search`) | target | got | verdict |",
            "|---|---|---|---|",
        ]
        for k, v in verdicts(res).items():
            lines.append(
                f"| {k} | {v['target']} | {_f(v['got'])} | {'met' if v['ok'] else 'NOT met'} |"
            )
    llm_rows = [n for n in res["systems"] if n.endswith("+llm")]
    if llm_rows:
        lines += [
            "",
            "| method | hits returned (mean) | cut off (deadline or call cap) |",
            "|---|---|---|",
        ]
        for name in [n.removesuffix("+llm") for n in llm_rows] + llm_rows:
            s = res["systems"].get(name, {})
            lines.append(f"| {name} | {_f(s.get('hits_mean'))} | {_f(s.get('cut_off_rate'))} |")
    calls = render_calls(res.get("llm_calls", {}))
    if calls:
        lines += ["", *calls]
    for note in res.get("notes", []):
        lines += ["", note]
    return "\n".join(lines) + "\n"
