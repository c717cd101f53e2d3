"""Tier-2 episode roll-ups (full mode): a past task whose steps match the query, as one memory."""

from __future__ import annotations

from typing import Any

from stratamem.core.retrieval.candidates import Candidate, Pool, num, priority_for

ROLLUP_MAX_STEPS = 6
ROLLUP_MAX_CHARS = 800


def build_rollups(
    traces: Pool,
    *,
    has_query_vector: bool,
    min_sim: float,
    keep: int,
    weight: float,
    half_life: float,
    now: int,
) -> Pool:
    """Episodes with ≥2 pooled traces whose best trace is close to the query and not negative."""
    pool = Pool("episode", (), lambda r: str(r.get("summary") or ""))
    if not has_query_vector:
        return pool
    by_ep: dict[str, list[Candidate]] = {}
    for c in traces.items.values():
        if c.row.get("episode_id"):
            by_ep.setdefault(str(c.row["episode_id"]), []).append(c)
    made: list[Candidate] = []
    for ep, members in by_ep.items():
        if len(members) < 2:
            continue
        best = max(members, key=lambda c: (num(c.row, "value"), c.cosine or -1.0))
        if (best.cosine or 0.0) < min_sim or num(best.row, "value") < 0:
            continue
        members.sort(key=lambda c: int(c.row.get("ts") or 0))
        lines = ["Past similar episode"]
        for m in members[:ROLLUP_MAX_STEPS]:
            r = m.row
            step = (r.get("summary") or "")[:160] or (
                f"{(r.get('user_text') or '')[:120]} → {(r.get('agent_text') or '')[:120]}"
            )
            if r.get("reflection"):
                step += f" (note: {str(r['reflection'])[:160]})"
            lines.append(f"- {step}")
        max_value = max(num(m.row, "value") for m in members)
        first_ts = int(members[0].row.get("ts") or 0)
        summary = "\n".join(lines)[:ROLLUP_MAX_CHARS]
        row: dict[str, Any] = {
            "id": ep,
            "ts": first_ts,
            "summary": summary,
            "value": max_value,
            "priority": sum(num(m.row, "priority") for m in members) / len(members),
            "source_trace_id": best.ref_id,
            "member_ids": [m.ref_id for m in members],
            "owner_agent_kind": best.row.get("owner_agent_kind"),
            "owner_profile_id": best.row.get("owner_profile_id"),
            "share_scope": best.row.get("share_scope"),
        }
        channels: dict[str, tuple[int, float]] = {}
        for m in members:
            for name, (rk, sc) in m.channels.items():
                if name not in channels or rk < channels[name][0]:
                    channels[name] = (rk, sc)
        made.append(
            Candidate(
                "episode",
                ep,
                row,
                2,
                channels,
                list(best.vectors),
                best.cosine,
                weight * priority_for(max_value, first_ts, now, half_life),
                summary,
            )
        )
    made.sort(key=lambda c: (-num(c.row, "value"), -(c.cosine or 0.0)))
    for c in made[:keep]:
        pool.items[c.ref_id] = c
    return pool
