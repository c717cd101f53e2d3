"""Three-tier retrieval: compile the query, run every channel under one absolute deadline, rank, render.

Tier 1 skills, tier 2 traces (+ episode roll-ups and feedback-derived experiences in full mode),
tier 3 world models. Pending (acknowledged, unapplied) trace rows are searched in memory with the
same channels, so a turn is recallable the moment ``turn_end`` returns.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stratamem.contract.dtos import (
    Namespace,
    RetrievalQuery,
    RetrievalResult,
)
from stratamem.core.embedding.base import is_asymmetric
from stratamem.core.hotindex import ScopedHotTable
from stratamem.core.hotindex.lexical import analyze
from stratamem.core.ids import now_ms
from stratamem.core.retrieval import (
    coverage,
    hot_tiers,
    lance_tiers,
    learned,
    query_shape,
    vocab_stage,
)
from stratamem.core.retrieval import hot_channels as hc
from stratamem.core.retrieval.candidates import (
    Candidate,
    Pool,
    num,
    priority_for,
    search_text,
    trace_text,
    unit,
)
from stratamem.core.retrieval.deadline import Deadline
from stratamem.core.retrieval.dense_query import dense_text, read_sample, sample_df
from stratamem.core.retrieval.expand import (
    NEIGHBOUR_WINDOW_MS,
    NearRows,
    Span,
    expand_pool,
    hot_rows_in_spans,
    in_spans,
)
from stratamem.core.retrieval.filters import TraceFilter, visible_context
from stratamem.core.retrieval.floor import floor_traces
from stratamem.core.retrieval.llm_filter import FilterResult, llm_filter
from stratamem.core.retrieval.llm_rewrite import llm_rewrite, widen
from stratamem.core.retrieval.plan import Plan, make_plan
from stratamem.core.retrieval.query import CompiledQuery, compile_query
from stratamem.core.retrieval.rank import Ranked, RankParams, rank
from stratamem.core.retrieval.result import build_result
from stratamem.core.retrieval.rollups import build_rollups
from stratamem.core.retrieval.settings import lightweight_of, setting
from stratamem.core.retrieval.temporal import (
    asks_present,
    by_cosine,
    lift_in_window,
    lift_recent,
    time_window,
)
from stratamem.core.routing import classify_intent, query_profile, schedule_injection
from stratamem.core.storage.ownership import Scope
from stratamem.core.storage.scoped import ScopedTable
from stratamem.core.telemetry import get_logger, span

_log = get_logger("retrieval")
_MISSING = object()


@dataclass
class RetrievalContext:
    """Everything one retrieval needs; ``deadline`` is absolute ``time.monotonic()`` seconds."""

    query: RetrievalQuery
    namespace: Namespace | None = None
    tables: Mapping[str, Any] = field(default_factory=dict)
    pending_traces: Sequence[Mapping[str, Any]] = ()
    embedder: Any | None = None
    config: Mapping[str, Any] | None = None
    lightweight: bool | None = None
    deadline: float | None = None
    tiers: Sequence[int] | None = None
    profile: str | None = None
    now_ms: int | None = None
    tz_offset_minutes: int = 0
    #: the LLM of the post-rank relevance filter (memos-core §5.7.5); None → pass-through
    llm: Any | None = None
    #: the ``LanceStore`` behind ``tables`` (its ANN recall knobs), when retrieval runs in a core
    store: Any | None = None
    #: the in-memory hot index serving the tables (None: query LanceDB directly)
    hot: Any | None = None
    #: the home's word store service (vocab/service.py): query expansion; None: none
    vocab: Any | None = None


# -- helpers ------------------------------------------------------------------------------------
async def _embed(embedder: Any, text: str) -> np.ndarray | None:
    fn = embedder.embed_query
    if inspect.iscoroutinefunction(fn):
        vec = await fn(text)
    else:
        vec = await asyncio.to_thread(fn, text)
        if inspect.isawaitable(vec):
            vec = await vec
    return unit(vec)


# -- the engine -----------------------------------------------------------------------------------
class _Run:
    def __init__(self, ctx: RetrievalContext) -> None:
        self.ctx = ctx
        self.cfg = ctx.config
        self._settings: dict[str, Any] = {}
        self.query = ctx.query
        self.dl = Deadline(ctx.deadline)
        self.lightweight = lightweight_of(self.cfg) if ctx.lightweight is None else ctx.lightweight
        self.cq: CompiledQuery = compile_query(ctx.query)
        self.profile = ctx.profile or query_profile(self.cq.text)
        self.plan: Plan = make_plan(
            ctx.query.reason,
            lightweight=self.lightweight,
            config=self.cfg,
            top_k=ctx.query.top_k,
            tiers=ctx.tiers,
            profile=self.profile,
        )
        self.qvec: np.ndarray | None = None
        self.pools: list[Pool] = []
        self.latency = {1: 0.0, 2: 0.0, 3: 0.0}
        self.now = ctx.now_ms if ctx.now_ms is not None else now_ms()
        self.min_sim = float(setting(self.cfg, "min_trace_sim"))
        self.filtered: FilterResult | None = None
        #: search queries an LLM added to the query (retrieval/llm_rewrite.py), empty offline
        self.rewrites: list[str] = []
        self.hot = ctx.hot
        self.vocab_store: Any | None = None
        self.vocab_counts: Any = None
        self.expand_params: Any = None
        self.lacking: dict[str, np.ndarray] = {}
        #: the hot traces' rows by slot (hot_tiers.TraceChannels.rows), for the coverage pick
        self.hot_rows: Mapping[int, Any] | None = None

    def s(self, key: str) -> Any:
        got = self._settings.get(key, _MISSING)
        if got is _MISSING:
            got = self._settings[key] = setting(self.cfg, key)
        return got

    def table(self, name: str) -> ScopedTable | None:
        """``name`` read through the caller's visibility scope (a raw table given in the context is
        wrapped: no channel reads outside the scope, whatever ``where`` it builds)."""
        t = self.ctx.tables.get(name) if self.ctx.tables else None
        if t is None or isinstance(t, ScopedTable):
            return t
        return ScopedTable(name, t, Scope.visible(self.ctx.namespace or Namespace()))

    def hot_table(self, name: str) -> ScopedHotTable | None:
        """``name`` from the hot index, through the caller's visibility scope (like ``table``)."""
        if self.hot is None:
            return None
        got: ScopedHotTable | None = self.hot.scoped(
            name, Scope.visible(self.ctx.namespace or Namespace())
        )
        return got

    async def dense_query_text(self) -> str:
        """The text the query is embedded from: without the words nearly every stored memory
        holds (retrieval/dense_query.py), counted by the hot traces index, else over a sample of
        the caller's stored memories (the LanceDB path)."""
        text = self.cq.text
        share = float(self.s("dense_common_word_share"))
        if share <= 0:
            return text
        hot = self.hot_table("traces")
        if hot is not None:  # counted over the caller's rows, as the LanceDB path's sample is
            df, n = hc.visible_df(hot)
            return dense_text(text, df, n, tokens=analyze, share=share)
        table = self.table("traces")
        if table is None:
            return text
        # read once per table version and scope, then reused (dense_query.SampleCache)
        sample = await self.dl.run("dense_sample", lambda: read_sample(table, self.ctx.store))
        if sample is None:
            return text
        df, n = sample_df(sample, text, analyze)
        return dense_text(text, df, n, tokens=analyze, share=share)

    # -- learned tables (skills, experiences, world models): retrieval/learned.py ----------------
    async def tier1(self) -> None:
        await learned.skills(self)

    async def tier3(self) -> None:
        await learned.world_models(self)

    async def experiences(self) -> None:
        await learned.experiences(self)

    # -- tier 2 traces -----------------------------------------------------------------------------
    def trace_filter(self) -> TraceFilter:
        hints = self.query.context_hints or {}
        max_age = int(self.s("vector_scan_max_age_ms") or 0)
        tag_mode = str(self.s("tag_filter"))
        return TraceFilter(
            namespace=self.ctx.namespace,
            include_low_value=self.plan.include_low_value,
            min_ts=self.now - max_age if max_age > 0 else None,
            tags=self.cq.tags if tag_mode != "off" else (),
            **visible_context(
                hints, self.query.session_id, reason=self.query.reason, lightweight=self.lightweight
            ),
        )

    async def tier2(self) -> None:
        t0 = time.perf_counter()
        cq = self.cq
        flt = self.trace_filter()
        pending = [dict(r) for r in self.ctx.pending_traces if "id" in r]
        k = self.plan.caps[2]
        wide = float(self.s("trace_pool_scale"))  # traces draw a wider pool than the small tiers
        vec_pool = max(k, math.ceil(k * float(self.s("candidate_pool_factor")) * wide))
        kw_pool = max(k, math.ceil(int(self.s("keyword_top_k")) * wide))
        personal = self.profile == "personal_fact"
        use_action = not self.lightweight and not personal
        opts: dict[str, Any] = {
            "min_sim": self.min_sim,
            "vec_pool": vec_pool,
            "kw_pool": kw_pool,
            "lexical_floor": float(self.s("trace_lexical_floor")),
            "k": k,
            "personal": personal,
            "use_action": use_action,
            "tag_mode": str(self.s("tag_filter")),
            "text_of": search_text,
        }
        if self.hot is not None:
            got = hot_tiers.trace_channels(
                self.hot_table("traces"), cq, self.qvec, flt, pending, **opts
            )
            self.hot_rows = got.rows
        else:
            got = await lance_tiers.trace_channels(
                self.table("traces"),
                cq,
                self.qvec,
                flt,
                pending,
                self.dl,
                store=self.ctx.store,
                **opts,
            )
        s_hits, a_hits, f_hits = got.vec_summary, got.vec_action, got.fts
        p_hits, st_hits, ex_hits = got.pattern, got.structural, got.exact_identifier
        pool = Pool("trace", ("vec_summary", "vec_action"), trace_text)
        pool.add_channel("vec_summary", s_hits)
        pool.add_channel("vec_action", a_hits)
        pool.add_channel("fts", f_hits)
        pool.add_channel("pattern", p_hits)
        pool.add_channel("structural", st_hits)
        pool.add_channel("exact_identifier", ex_hits)
        cap = max(vec_pool, kw_pool) * 2
        if len(pool.items) > cap:  # keep the best-placed candidates (by best rank across channels)
            keep = sorted(
                pool.items.values(), key=lambda c: min(r for r, _ in c.channels.values())
            )[:cap]
            pool.items = {c.ref_id: c for c in keep}
        floor_traces(pool, self.cq.terms, self.qvec, self.hot_table("traces"), self.cfg)
        half_life = float(setting(self.cfg, "decay_half_life_days", "reward"))
        weight = 0.0 if personal else min(float(self.s("weight_priority")), 0.3)
        for c in pool.items.values():
            c.boost = weight * priority_for(
                num(c.row, "value"), int(c.row.get("ts") or 0), self.now, half_life
            )
        if str(self.s("trace_fusion")) == "calibrated":
            await self.fuse_traces(pool, flt, [r for r in pending if flt.accepts(r)])
        self.pools.append(pool)
        if self.plan.episodes:
            pool.set_cosines(self.qvec)
            self.pools.append(
                build_rollups(
                    pool,
                    has_query_vector=self.qvec is not None,
                    min_sim=float(self.s("episode_goal_min_sim")),
                    keep=self.plan.caps[2],
                    weight=weight,
                    half_life=half_life,
                    now=self.now,
                )
            )
        if self.plan.experiences:
            await self.experiences()
        self.latency[2] += (time.perf_counter() - t0) * 1000

    async def fuse_traces(
        self, pool: Pool, flt: TraceFilter, pending: Sequence[Mapping[str, Any]]
    ) -> None:
        """Score-calibrated fusion lifted by session neighbours and by a time phrase of the query
        (retrieval/fusion.py, expand.py, temporal.py)."""

        async def fetch(spans: list[Span], stage: str = "neighbours") -> list[dict[str, Any]]:
            hot = self.hot_table("traces")
            if hot is not None:
                return hot_rows_in_spans(hot, hc.trace_mask(hot, flt), spans)
            table = self.table("traces")
            if table is None:
                return []
            return await lance_tiers.rows_in_spans(table, flt.where(), spans, self.dl, stage)

        near_rows: NearRows | None = None
        hot = self.hot_table("traces")
        table = self.table("traces")
        if hot is not None:  # the seeds' session neighbours straight from the hot index

            def near_rows(seeds: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
                assert hot is not None
                return hc.session_neighbours(
                    hot, hc.trace_mask(hot, flt), seeds, NEIGHBOUR_WINDOW_MS
                )

        elif table is not None:  # LanceDB: their places first, whole rows for new ones only

            async def near_rows(seeds: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
                assert table is not None
                return await lance_tiers.session_neighbours(
                    table, flt.where(), seeds, pool.items, self.dl
                )

        said = "\n".join([self.cq.text, *self.rewrites])
        window = time_window(said, self.now, self.ctx.tz_offset_minutes)
        if window is not None:  # the memories told in the window join the pool
            span: list[Span] = [window.span()]
            told: list[Mapping[str, Any]] = list(await fetch(span, "time_window"))
            told += [r for r in pending if in_spans(r, span)]
            pool.add_channel("time_window", by_cosine(told, self.qvec))
        await expand_pool(
            pool,
            fetch,
            pending,
            self.qvec,
            lexical_weight=float(self.s("fusion_lexical_weight")),
            lexical_power=float(self.s("fusion_lexical_power")),
            weight=float(self.s("neighbour_weight")),
            top=int(self.s("neighbour_expand_top")),
            near_rows=near_rows,
        )
        lift_in_window(pool, window, float(self.s("time_window_weight")))
        if window is None and asks_present(said):  # "where do I live now?": newest first
            lift_recent(pool, float(self.s("present_recency_weight")))

    # -- whole run -----------------------------------------------------------------------------
    async def run(self) -> RetrievalResult:
        with span(
            "retrieval",
            reason=self.query.reason,
            session=self.query.session_id,
            tiers=",".join(map(str, self.plan.tiers)),
            deadline_left_s=self.dl.remaining(),
        ) as sp:
            if self.plan.tiers and self.plan.limit > 0 and self.cq.text.strip():
                await self.collect()
            ranked = await self.filter(self.rank())
            if self.filtered is not None:
                sp.set_attribute("llm_filter", self.filtered.outcome)
            linked = await learned.linked_policies(self, ranked)
            result = build_result(self, ranked, linked)
            sp.set_attribute("hits", len(result.hits))
            sp.set_attribute("cut_off", result.cut_off)
            return result

    async def collect(self) -> None:
        emb = self.ctx.embedder
        rewrite = await llm_rewrite(
            self.cq.text, llm=self.ctx.llm, config=self.cfg, remaining_s=self.dl.remaining()
        )
        self.rewrites = rewrite.queries
        self.cq = widen(self.cq, self.rewrites)
        if emb is not None:
            text = await self.dense_query_text()
            words = await vocab_stage.query_words_of(self)
            batch = hasattr(emb, "embed_many") or hasattr(emb, "embed_documents")
            if words and words[1] and batch:  # the words the home lacks: in the query's call
                got = await self.dl.run(
                    "embed",
                    lambda: vocab_stage.embed_with_words(
                        emb, text, words[1], getattr(self.ctx.vocab, "lacking", None)
                    ),
                )
                if got is not None:
                    self.qvec, self.lacking = got
            if self.qvec is None:  # (also when a batch could not be embedded: the query alone)
                self.qvec = await self.dl.run("embed", lambda: _embed(emb, text))
            if self.rewrites and self.qvec is not None:  # the rewrites' meaning joins the query's
                extra = "\n".join(self.rewrites)
                also = await self.dl.run("embed_rewrite", lambda: _embed(emb, extra))
                if also is not None:
                    self.qvec = unit(self.qvec + also)
            if words and self.qvec is not None and self.vocab_store is not None:
                vocab_stage.expand_query(self, words[0])
        jobs = []
        if 1 in self.plan.tiers:
            jobs.append(self.tier1())
        if 2 in self.plan.tiers:
            jobs.append(self.tier2())
        if 3 in self.plan.tiers:
            jobs.append(self.tier3())
        if self.hot is not None:
            # in-memory tiers never wait: inline, in the order gather would run them
            for job in jobs:
                await job
        else:
            await asyncio.gather(*jobs)

    def rank(self) -> list[Ranked]:
        cands: list[Candidate] = []
        for pool in self.pools:
            pool.set_cosines(self.qvec)
            cands.extend(c for c in pool.items.values() if c.channels)
        lam = 0.85 if self.profile == "personal_fact" else float(self.s("mmr_lambda"))
        set_query = query_shape.asks_for_set(self.cq.text)
        params = RankParams(
            limit=self.plan.limit,
            tier_caps={t: self.plan.caps[t] for t in self.plan.tiers},
            rrf_k=int(self.s("rrf_constant")),
            mmr_lambda=lam,
            relative_floor=float(self.s("relative_threshold_floor")),
            smart_seed=bool(self.s("smart_seed")),
            smart_seed_ratio=float(self.s("smart_seed_ratio")),
            multi_channel_bypass=bool(self.s("multi_channel_bypass")),
            min_trace_sim=self.min_sim,
            identifiers=self.cq.identifiers,
            session_penalty=query_shape.gated(
                float(self.s("session_diversity")),
                str(self.s("session_diversity_gate")),
                set_query,
            ),
            session_free=int(self.s("session_diversity_free")),
            **coverage.pick_settings(self, set_query),
        )
        ranked = rank(cands, params)
        # one memory per episode: the trace or its roll-up, whichever scored higher (episode on ties)
        eps = {it.cand.ref_id: it for it in ranked if it.cand.ref_kind == "episode"}
        out = []
        for it in ranked:
            if it.cand.ref_kind == "trace":
                ep = eps.get(str(it.cand.row.get("episode_id")))
                if (
                    ep is not None
                    and it.cand.ref_id in ep.cand.row.get("member_ids", ())
                    and ep.score >= it.score
                ):
                    continue
            out.append(it)
        kept_traces = {it.cand.ref_id for it in out if it.cand.ref_kind == "trace"}
        return [
            it
            for it in out
            if it.cand.ref_kind != "episode"
            or not kept_traces.intersection(it.cand.row.get("member_ids", ()))
        ]

    async def filter(self, ranked: list[Ranked]) -> list[Ranked]:
        """The LLM relevance filter over the ranked list (pass-through without an LLM)."""
        if not ranked:
            return ranked
        self.filtered = await llm_filter(
            ranked,
            llm=self.ctx.llm,
            query=self.cq.text,
            config=self.cfg,
            lightweight=self.lightweight,
            remaining_s=self.dl.remaining(),
            retries=self.query.llm_filter_malformed_retries,
            # a caller's top k is the number it asked for (memos-core: max keep := t1 + t2 + t3)
            max_keep=(
                sum(self.plan.caps[t] for t in self.plan.tiers)
                if self.query.top_k is not None
                else None
            ),
        )
        if self.filtered.timed_out:
            self.dl.cut_off = True
        return self.filtered.kept


# -- public entry points -----------------------------------------------------------------------
class _CoreEmbedder:
    def __init__(self, core: Any) -> None:
        self.core = core

    @property
    def asymmetric(self) -> bool:
        return is_asymmetric(getattr(self.core, "embedder", None))

    async def embed_query(self, text: str) -> Any:
        return await self.core.embed_query(text)

    async def embed_many(self, texts: list[str]) -> Any:
        return await self.core.embed_many(texts)


def _monotonic_deadline(deadline_at_ms: int | None, config: Mapping[str, Any] | None) -> float:
    if deadline_at_ms is None:
        return time.monotonic() + float(setting(config, "default_deadline_ms")) / 1000
    return time.monotonic() + (deadline_at_ms - now_ms()) / 1000


def scheduled_tiers(query: RetrievalQuery) -> tuple[int, ...] | None:
    """turn_start: the injection scheduler's tiers for the query text (other reasons: the plan's)."""
    if query.reason != "turn_start":
        return None
    text = query.query or ""
    inj = schedule_injection(classify_intent(text), None, query_profile(text))
    return () if inj.skip else inj.tiers


async def retrieve(
    ctx: RetrievalContext | None = None,
    *,
    core: Any | None = None,
    query: RetrievalQuery | None = None,
    namespace: Namespace | None = None,
    pending: Sequence[Mapping[str, Any]] = (),
    config: Mapping[str, Any] | None = None,
) -> RetrievalResult:
    """Run one retrieval. Either pass a ``RetrievalContext`` or the facade's keywords (``core=…``)."""
    if ctx is None:
        if query is None:
            raise TypeError("retrieve() needs a RetrievalContext or query=")
        tables: dict[str, Any] = {}
        store = getattr(core, "store", None)
        visible = Scope.visible(namespace or query.namespace or Namespace())
        for name in ("traces", "policies", "world_models", "skills"):
            try:  # the query path reads through the caller's scope, never a raw table
                tables[name] = store.scoped(name, visible) if store is not None else None
            except Exception:
                tables[name] = None
            never_written = name != "traces" and not _may_have_rows(store, name)
            if never_written:  # an empty learning table costs a LanceDB round trip per channel
                tables[name] = None
        ctx = RetrievalContext(
            query=query,
            namespace=namespace or query.namespace,
            tables=tables,
            pending_traces=pending,
            embedder=_CoreEmbedder(core) if getattr(core, "embedder", None) is not None else None,
            config=config if config is not None else getattr(core, "config", None),
            lightweight=getattr(core, "lightweight", None),
            deadline=_monotonic_deadline(query.deadline_at, config),
            tiers=scheduled_tiers(query),
            llm=getattr(core, "llm", None),
            store=store,
            hot=_hot_for(store, visible),
            vocab=getattr(core, "vocab", None),
        )
    return await _Run(ctx).run()


def _hot_for(store: Any, scope: Scope) -> Any | None:
    """The hot index when it holds every row ``scope`` may read (its memory budget may leave a
    namespace to the LanceDB path, which returns the same results)."""
    pick = getattr(store, "hot_for", None)
    return pick(scope) if pick is not None else getattr(store, "hot", None)


def _may_have_rows(store: Any, name: str) -> bool:
    check = getattr(store, "may_have_rows", None)
    return True if check is None else bool(check(name))
