"""Recall records, append/search results and the per-call vector provider protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

RecallKind = Literal["decision", "preference", "solution"]
RECALL_KINDS: tuple[str, ...] = ("decision", "preference", "solution")


@dataclass(frozen=True, slots=True)
class RecallRecord:
    id: str
    project_id: str
    kind: str
    content: str
    content_hash: str
    tags: tuple[str, ...] = ()
    task_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    origin: str | None = None
    kg_node_ids: tuple[str, ...] = ()
    created_at: int = 0
    updated_at: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "project_id": self.project_id,
            "kind": self.kind,
            "content": self.content,
            "content_hash": self.content_hash,
            "tags": list(self.tags),
            "source": {
                "task_id": self.task_id,
                "agent_id": self.agent_id,
                "session_id": self.session_id,
                "origin": self.origin,
            },
            "kg_node_ids": list(self.kg_node_ids),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True, slots=True)
class RecallAppendResult:
    """``accepted`` False means a duplicate: ``duplicate_reason`` is ``exact`` or ``similar``."""

    accepted: bool
    record: RecallRecord
    duplicate_reason: str | None = None
    similarity: float | None = None


@dataclass(frozen=True, slots=True)
class RecallReplaceResult:
    """``record`` now holds the new content; ``merged`` means an exact-normalised twin already held
    it, so the matched record (``previous``) was removed rather than duplicated."""

    record: RecallRecord
    previous: RecallRecord
    merged: bool = False


@dataclass(frozen=True, slots=True)
class RecallHit:
    record: RecallRecord
    score: float


@dataclass(frozen=True, slots=True)
class RecallSearchResult:
    mode: Literal["keyword", "vector"]
    hits: list[RecallHit]
    capabilities: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecallVectorHit:
    id: str
    score: float


class RecallVectorSearchProvider(Protocol):
    """Ranks the candidates it is given — never fetches, writes or filters. ``limit`` is advisory."""

    def search(
        self, query: str, candidates: Sequence[RecallRecord], limit: int
    ) -> Sequence[Any]: ...
