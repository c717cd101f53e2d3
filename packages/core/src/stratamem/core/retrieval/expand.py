"""Neighbour-turn expansion: a memory is lifted by the best of the turns next to it in its session.

In a conversation the turn that matches the question's words is often not the one that holds the
answer: "what did she research?" matches the turn asking about it, the answer is the next one. So
the best-scored traces fetch their session neighbours (same session, adjacent by time then capture
order, within a short window) and every trace gets ``score + β·max(neighbour scores)``; a fetched
neighbour becomes a candidate of its own unless its cosine is below every retrieved candidate's (a
turn about something else entirely would only crowd the list: measured on the long-memory set, where
sessions switch topic every turn).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

#: weight of the best neighbour's score added to a trace's own
NEIGHBOUR_WEIGHT = 0.5
#: how many of the best-scored traces fetch their neighbours
EXPAND_TOP = 10
#: neighbours are at most this far apart in time (a new conversation is not a neighbour)
NEIGHBOUR_WINDOW_MS = 30 * 60 * 1000
#: at most this many rows per neighbour fetch (a very long session is cut, never scanned whole)
FETCH_LIMIT = 400


def _order_key(row: Mapping[str, Any]) -> tuple[int, str]:
    return int(row.get("ts") or 0), str(row.get("id"))


def adjacency(
    rows: Iterable[Mapping[str, Any]], window_ms: int = NEIGHBOUR_WINDOW_MS
) -> dict[str, list[str]]:
    """id -> ids of the previous and next trace of the same session (by ts, then id) within the window."""
    by_session: dict[str, list[Mapping[str, Any]]] = {}
    seen: set[str] = set()
    for r in rows:
        rid = str(r.get("id"))
        if rid in seen or not r.get("session_id"):
            continue
        seen.add(rid)
        by_session.setdefault(str(r["session_id"]), []).append(r)
    out: dict[str, list[str]] = {}
    for members in by_session.values():
        members.sort(key=_order_key)
        for i, r in enumerate(members):
            near = []
            for j in (i - 1, i + 1):
                if 0 <= j < len(members):
                    other = members[j]
                    if abs(int(other.get("ts") or 0) - int(r.get("ts") or 0)) <= window_ms:
                        near.append(str(other["id"]))
            out[str(r["id"])] = near
    return out


def propagate(
    scores: Mapping[str, float],
    neighbours: Mapping[str, Sequence[str]],
    weight: float = NEIGHBOUR_WEIGHT,
) -> dict[str, float]:
    """score + weight·max(0, best neighbour's score) for every scored id (one hop, from the old scores)."""
    out: dict[str, float] = {}
    for rid, s in scores.items():
        near = [scores[n] for n in neighbours.get(rid, ()) if n in scores]
        out[rid] = s + weight * max(0.0, max(near, default=0.0))
    return out


#: (session id or None for any session, first ts, last ts): a slice of a namespace's traces
Span = tuple[str | None, int, int]
#: seeds -> the stored rows next to them in their sessions (the hot index's, or LanceDB's awaited)
NearRows = Callable[
    [list[Mapping[str, Any]]],
    Sequence[Mapping[str, Any]] | Awaitable[Sequence[Mapping[str, Any]]],
]


def neighbour_spans(
    rows: Sequence[Mapping[str, Any]], window_ms: int = NEIGHBOUR_WINDOW_MS
) -> list[Span]:
    """One span per session: the rows' times widened by the window on both sides."""
    spans: dict[str, tuple[int, int]] = {}
    for r in rows:
        sid = str(r.get("session_id") or "")
        if not sid:
            continue
        ts = int(r.get("ts") or 0)
        lo, hi = spans.get(sid, (ts, ts))
        spans[sid] = (min(lo, ts), max(hi, ts))
    return [(sid, lo - window_ms, hi + window_ms) for sid, (lo, hi) in sorted(spans.items())]


def in_spans(row: Mapping[str, Any], spans: Sequence[Span]) -> bool:
    ts = int(row.get("ts") or 0)
    sid = str(row.get("session_id") or "")
    return any((s is None or s == sid) and lo <= ts <= hi for s, lo, hi in spans)


def spans_where(spans: Sequence[Span]) -> str:
    """The spans as a SQL predicate (LanceDB path)."""
    from stratamem.core.storage.ownership import quote as q

    return " OR ".join(
        f"({'' if sid is None else f'session_id = {q(sid)} AND '}ts >= {lo} AND ts <= {hi})"
        for sid, lo, hi in spans
    )


def hot_rows_in_spans(
    t: Any, mask: Any, spans: Sequence[Span], limit: int = FETCH_LIMIT
) -> list[dict[str, Any]]:
    """The spans over the in-memory traces table (``mask`` = the visibility filter's slots)."""
    import numpy as np

    n = t.n
    hit = np.zeros(n, dtype=bool)
    for sid, lo, hi in spans:
        if sid is not None:  # a session's own slots, not a scan of the table
            slots = t.session_slots(sid)
            ts = t.ts[slots]
            hit[slots[(ts >= lo) & (ts <= hi)]] = True
            continue
        hit |= (t.ts[:n] >= lo) & (t.ts[:n] <= hi)
    return [t.full_row(int(slot)) for slot in np.flatnonzero(hit & mask)[:limit]]


async def expand_pool(
    pool: Any,
    fetch: Callable[[list[Span]], Awaitable[Sequence[Mapping[str, Any]]]],
    pending: Sequence[Mapping[str, Any]],
    qvec: Any,
    *,
    lexical_weight: float,
    lexical_power: float = 1.0,
    weight: float = NEIGHBOUR_WEIGHT,
    top: int = EXPAND_TOP,
    near_rows: NearRows | None = None,
) -> None:
    """Fuse the trace pool's channels, add the best traces' session neighbours, lift every trace
    by its best neighbour, and leave the result in each candidate's ``prior``.

    ``fetch(spans)`` returns the stored traces in the spans that pass the caller's visibility
    filter; ``pending`` are the unapplied rows that already passed it. ``near_rows(seeds)``, when given,
    replaces that fetch with just the stored rows next to each seed in its session (the hot index
    finds them without reading the spans whole; LanceDB, awaited, reads the spans' places and
    whole rows only for the neighbours the pool lacks): only edges touching a seed are used, so
    the result is the same.
    """
    from stratamem.core.retrieval.fusion import CosineScale, fused_scores

    pool.set_cosines(qvec)
    scores = fused_scores(pool.items.values(), lexical_weight, lexical_power)
    seeds = [pool.items[i].row for i in sorted(scores, key=lambda i: -scores[i])[:top]]
    adj: dict[str, list[str]] = {}
    if seeds and weight > 0:
        spans = neighbour_spans(seeds)
        if near_rows is not None:
            got = near_rows(seeds) if spans else []
            rows = list(await got if inspect.isawaitable(got) else got)
        else:
            rows = list(await fetch(spans)) if spans else []
        rows += [r for r in pending if in_spans(r, spans)]
        adj = adjacency([*seeds, *rows])
        seed_ids = {str(s["id"]) for s in seeds}
        wanted = {n for sid in seed_ids for n in adj.get(sid, ())}
        new = [r for r in rows if str(r["id"]) in wanted and str(r["id"]) not in pool.items]
        if new:
            scale = CosineScale(c.cosine for c in pool.items.values())
            pool.add_channel("neighbour", [(r, 0.0) for r in new])
            pool.set_cosines(qvec)
            for r in new:
                c = pool.items[str(r["id"])]
                if scale(c.cosine) <= 0:  # less related than anything retrieved: not added
                    del pool.items[c.ref_id]
                    continue
                scores[c.ref_id] = (1 - lexical_weight) * scale(c.cosine)
        # only the seeds' windows were fetched whole: propagate along their edges alone
        adj = {i: [n for n in near if i in seed_ids or n in seed_ids] for i, near in adj.items()}
    final = propagate(scores, adj, weight)
    for c in pool.items.values():
        c.prior = final.get(c.ref_id, 0.0)
