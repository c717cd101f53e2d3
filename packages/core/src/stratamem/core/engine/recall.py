"""Recall: validate a search, read the journal's pending rows (read-your-writes), run retrieval,
never fail a turn for a retrieval error, and prepend the session's decision-repair packet."""

from __future__ import annotations

import os
from dataclasses import replace

from stratamem.contract.dtos import Namespace, RetrievalQuery, RetrievalResult
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.engine.services import EngineServices
from stratamem.core.ids import now_ms
from stratamem.core.retrieval.engine import retrieve as rank_and_render
from stratamem.core.storage.ownership import Scope
from stratamem.core.telemetry import get_logger, span
from stratamem.core.validation import bad, check_id, check_text, check_top_k

_log = get_logger("core")

#: the retrieval reasons a caller may give
REASONS = ("turn_start", "tool_driven", "skill_invoke", "sub_agent", "decision_repair")


async def search(svc: EngineServices, query: RetrievalQuery, ns: Namespace) -> RetrievalResult:
    check_id("agent", query.agent)
    check_text("query", query.query, svc.max_input)
    check_top_k(query.top_k, int(svc.config["retrieval"]["max_top_k"]))
    if query.reason not in REASONS:
        raise bad(f"unknown retrieval reason {query.reason!r}", field="reason")
    if query.session_id is None:
        query = replace(query, session_id=f"adhoc-session-{os.urandom(4).hex()}")
    if svc.deadline_left_s(query.deadline_at) <= 0:
        return RetrievalResult(query=query, cut_off=True, packet_id=f"empty-{now_ms()}")
    with span("search", reason=query.reason, session=query.session_id):
        result = await retrieve_safely(svc, query, ns)
    if query.reason == "sub_agent" and query.session_id:
        result = await with_repair(svc, result, query.session_id)
    return result


async def with_repair(
    svc: EngineServices, result: RetrievalResult, session_id: str
) -> RetrievalResult:
    """Decision repair (memos-core §5.8, fixed): the session's undelivered repair packet is
    prepended to the injected context of its next turn start / sub-agent start."""
    if svc.learner is None:
        return result
    try:
        block = await svc.learner.repair_packet(session_id)
    except Exception as exc:
        _log.warning("learning.repair_packet_failed", error=str(exc))
        return result
    if not block:
        return result
    text = block + ("\n\n" + result.injected_context if result.injected_context else "")
    return replace(result, injected_context=text)


async def retrieve_safely(
    svc: EngineServices, query: RetrievalQuery, ns: Namespace
) -> RetrievalResult:
    """Never raises for a retrieval failure: an empty result instead (memos-core §1.3)."""
    svc.bus.emit(
        "retrieval.triggered",
        {"reason": query.reason, "session_id": query.session_id},
        namespace=ns,
    )
    try:
        result = await retrieve(svc, query, ns)
    except StratamemError as exc:
        if exc.code == ErrorCode.INVALID_ARGUMENT:
            raise
        _log.warning("retrieval.failed", error=str(exc))
        result = RetrievalResult(query=query, packet_id=f"empty-{now_ms()}")
    except Exception as exc:
        _log.warning("retrieval.failed", error=str(exc))
        result = RetrievalResult(query=query, packet_id=f"empty-{now_ms()}")
    if result.hits:
        svc.bus.emit(
            "retrieval.hit",
            {
                "reason": query.reason,
                "session_id": query.session_id,
                "hits": len(result.hits),
                "tiers": sorted({h.tier for h in result.hits}),
            },
            namespace=ns,
        )
    else:
        svc.bus.emit(
            "retrieval.empty",
            {"reason": query.reason, "session_id": query.session_id},
            namespace=ns,
        )
    return result


async def retrieve(svc: EngineServices, query: RetrievalQuery, ns: Namespace) -> RetrievalResult:
    """Stored rows plus the journal's still-pending rows visible to ``ns``, ranked. A result
    ranked while a restart's replay still had acknowledged turns on disk (the wait ran out of
    budget) is marked ``cut_off``: it may be missing them."""
    visible = Scope.visible(ns)
    pending = await svc.wait_for_writes(query.deadline_at, visible.accepts)
    unseen = svc.journal.replaying()
    pending = [r for r in pending if visible.accepts(r)]
    out: RetrievalResult = await rank_and_render(
        core=svc, query=query, namespace=ns, pending=pending, config=svc.config
    )
    return replace(out, cut_off=True) if unseen and not out.cut_off else out
