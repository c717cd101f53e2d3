"""How many memories hold each index token, kept per owner (agent kind, profile, share scope), so
a query counts only the memories its caller may see.

Why per owner: the expansion's filters are shares of the memories ("rare": held by ≤ 2 %; "the
speakers' names": held by ≥ 80 %). Counted over a whole home, a word frequent in one namespace's
talk is rare home-wide when other namespaces hold most of the memories, and it passes the cap:
with six personas in one home the long-memory set lost answerable R@10 0.914 → 0.894
(bench/results/locomo.md, sessions 8 and 9). The counts come from the word store, not from the
index a query reads, so the hot index and the LanceDB path expand a query alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stratamem.core.storage.ownership import Scope, row_kind, row_profile

#: (agent kind, profile, share scope): what decides who may see a memory
Owner = tuple[str, str, str]
#: distinct scopes whose visible owners a store remembers (recomputed when a new owner arrives)
MAX_SCOPES_CACHED = 256


def owner_of(row: Mapping[str, Any]) -> Owner:
    """The owner key of a stored row (the ownership rule's defaults for missing columns)."""
    return row_kind(row), row_profile(row), str(row.get("share_scope") or "private")


def _as_row(owner: Owner) -> dict[str, str]:
    return {"owner_agent_kind": owner[0], "owner_profile_id": owner[1], "share_scope": owner[2]}


@dataclass(slots=True)
class Counts:
    """One owner's memories and, per token, how many of them hold it."""

    df: dict[str, int] = field(default_factory=dict)
    memories: int = 0

    def add(self, tokens: Iterable[str]) -> None:
        """Count one memory holding ``tokens`` (distinct)."""
        df = self.df
        for tok in tokens:
            df[tok] = df.get(tok, 0) + 1
        self.memories += 1


class ScopeCounts:
    """The counts of the owners one scope may see, summed on demand (a query reads a few dozen
    tokens; most callers see one or two owners)."""

    __slots__ = ("_parts", "memories")

    def __init__(self, parts: list[Counts]) -> None:
        self._parts = parts
        self.memories = sum(p.memories for p in parts)

    def df(self, tok: str) -> int:
        return sum(p.df.get(tok, 0) for p in self._parts)


class OwnerCounts:
    """Counts per owner, and the visible owners of each scope (cached until a new owner)."""

    def __init__(self) -> None:
        self.owners: dict[Owner, Counts] = {}
        self._visible: dict[Scope, tuple[int, list[Counts]]] = {}

    @property
    def memories(self) -> int:
        return sum(c.memories for c in self.owners.values())

    def of(self, owner: Owner) -> Counts:
        got = self.owners.get(owner)
        if got is None:
            got = self.owners[owner] = Counts()
        return got

    def clear(self) -> None:
        self.owners.clear()
        self._visible.clear()

    def visible(self, scope: Scope) -> ScopeCounts:
        """The counts over the memories ``scope`` may read."""
        n = len(self.owners)
        got = self._visible.get(scope)
        if got is None or got[0] != n:
            if len(self._visible) >= MAX_SCOPES_CACHED:
                self._visible.clear()
            parts = [c for o, c in self.owners.items() if scope.accepts(_as_row(o))]
            got = self._visible[scope] = (n, parts)
        return ScopeCounts(got[1])
