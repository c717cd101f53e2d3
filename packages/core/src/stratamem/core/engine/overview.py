"""What a console (the viewer) shows about a home: which namespaces hold memories, how many traces
each holds, how memory grew per day, and who owns a row it is asked about.

Figures come from ``namespace_days`` (one row per namespace and day), which SQLite triggers on the
episodes table keep current in the same transaction as the episode's own change (migration 4). An
episode row carries its trace ids, written in the transaction that journals the turn (so
acknowledged but not yet applied turns count) and unlinked when a trace is deleted, so the figures
are exact without ever scanning traces or episodes. Filters are the ownership rule's own
(:func:`owned_where`); a trace counts on the UTC day its episode started.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stratamem.contract.dtos import Namespace
from stratamem.core.engine import sessions
from stratamem.core.engine.services import EngineServices
from stratamem.core.storage.ownership import DEFAULT_PROFILE, UNKNOWN_KIND, Scope, owned_where

#: tables whose rows a console may ask the owner of
ROW_TABLES = ("traces", "policies", "world_models", "skills", "episodes", "sessions")


@dataclass(frozen=True, slots=True)
class NamespaceFigures:
    """One namespace of the home: its traces and episodes, and its newest turn (epoch ms)."""

    namespace: Namespace
    traces: int
    episodes: int
    last_ts: int

    @property
    def key(self) -> str:
        return f"{self.namespace.agent_kind}/{self.namespace.profile_id}"


def _owners_where(owners: Sequence[Namespace] | None) -> str:
    """``true`` for every owner (``None``), else the rule's owned filter of each, OR-ed."""
    if owners is None:
        return Scope.everything("overview").where
    if not owners:
        return "false"
    return "(" + " OR ".join(owned_where(ns) for ns in owners) + ")"


async def namespaces(
    svc: EngineServices, allows: Callable[[Namespace], bool] | None = None
) -> list[NamespaceFigures]:
    """Every namespace holding a trace or an episode (``allows`` filters them), newest first."""
    sql = (
        "SELECT owner_agent_kind AS kind, owner_profile_id AS profile, SUM(episodes) AS episodes,"
        " SUM(traces) AS traces, MAX(last_ts) AS last_ts FROM namespace_days"
        " GROUP BY owner_agent_kind, owner_profile_id HAVING SUM(episodes) > 0 OR SUM(traces) > 0"
    )
    rows = await svc.run_db(lambda: svc.db.query(sql))
    out = []
    for r in rows:
        ns = Namespace(
            agent_kind=str(r["kind"] or UNKNOWN_KIND),
            profile_id=str(r["profile"] or DEFAULT_PROFILE),
        )
        if allows is None or allows(ns):
            out.append(
                NamespaceFigures(ns, int(r["traces"]), int(r["episodes"]), int(r["last_ts"] or 0))
            )
    out.sort(key=lambda f: (-f.last_ts, f.key))
    return out


async def growth(
    svc: EngineServices, owners: Sequence[Namespace] | None = None
) -> list[dict[str, Any]]:
    """Traces added per UTC day and the running total, for ``owners`` (``None``: every owner)."""
    sql = (
        "SELECT day, SUM(traces) AS added FROM namespace_days"
        f" WHERE {_owners_where(owners)} GROUP BY day ORDER BY day"
    )
    rows = await svc.run_db(lambda: svc.db.query(sql))
    total, out = 0, []
    for r in rows:
        added = int(r["added"] or 0)
        if added:
            total += added
            out.append({"day": str(r["day"]), "added": added, "total": total})
    return out


async def owned_counts(svc: EngineServices, owners: Sequence[Namespace]) -> dict[str, int]:
    """Rows of each learned layer owned by ``owners`` (filtered counts in the store)."""
    counts = {}
    for table in ("policies", "world_models", "skills"):
        counts[table] = sum([await svc.store.count(table, Scope.owned(ns)) for ns in owners])
    return counts


def holding_episodes(figures: Sequence[NamespaceFigures]) -> tuple[Namespace, ...]:
    """The namespaces of ``figures`` holding an episode, in their order (``Health.namespaces``:
    where the CLI searches when no namespace is given)."""
    return tuple(f.namespace for f in figures if f.episodes > 0)


async def scoped_counts(
    svc: EngineServices,
    allows: Callable[[Namespace], bool],
    figures: Sequence[NamespaceFigures] | None = None,
) -> dict[str, int]:
    """What a caller limited to the namespaces ``allows`` accepts may count: its namespaces'
    traces, episodes and learned rows (the viewer's ``/api/system`` and gRPC ``Health``).
    ``figures``: ``namespaces(svc, allows)`` when the caller has read them already."""
    if figures is None:
        figures = await namespaces(svc, allows)
    counts = await owned_counts(svc, [f.namespace for f in figures])
    counts["traces"] = sum(f.traces for f in figures)
    counts["episodes"] = sum(f.episodes for f in figures)
    return counts


async def row_owner(svc: EngineServices, table: str, row_id: str) -> Namespace | None:
    """The namespace owning one row of ``table`` (``None``: no such row). A look-up by id across
    every namespace: the caller decides what the owner may be shown to."""
    if table not in ROW_TABLES:
        raise ValueError(f"no owner look-up for table {table!r}")
    if table in ("sessions", "episodes"):
        return await sessions.owner_of(svc, table, row_id)
    if table == "traces":
        await svc.wait_for_replay(f"owner of trace {row_id}")
        for r in svc.journal.pending_rows("trace"):
            if r.get("id") == row_id:
                return _owner(r)
    rows = await svc.store.get_rows(table, [row_id], Scope.everything(f"owner_of.{table}"))
    return _owner(rows[0]) if rows else None


def _owner(row: dict[str, Any]) -> Namespace:
    return Namespace(
        agent_kind=str(row.get("owner_agent_kind") or UNKNOWN_KIND),
        profile_id=str(row.get("owner_profile_id") or DEFAULT_PROFILE),
    )
