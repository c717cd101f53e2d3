"""Row filters of each tier, as LanceDB ``where`` strings and as the same predicate over pending rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stratamem.contract.dtos import Namespace
from stratamem.core.storage.ownership import Scope
from stratamem.core.storage.ownership import quote as q

MAX_VISIBLE_TEXTS = 128


def like(term: str) -> str:
    """A LIKE pattern for a lower-cased substring (``%`` in the term becomes a one-char wildcard)."""
    return q("%" + term.lower().replace("%", "_") + "%")


@dataclass(frozen=True, slots=True)
class TraceFilter:
    """Tier-2 trace filter: visibility, low-value cut, visible-context exclusion, tag and age bounds."""

    namespace: Namespace | None
    include_low_value: bool = False
    session_id: str | None = None
    exclude_whole_session: bool = False
    exclude_from_ts: int | None = None
    exclude_user_texts: tuple[str, ...] = ()
    min_ts: int | None = None  # vector channels only
    tags: tuple[str, ...] = ()  # vector channels only

    def where(self, *, vector: bool = False, with_tags: bool = False) -> str:
        parts = [Scope.visible(self.namespace or Namespace()).where]
        if not self.include_low_value:
            parts.append("priority > 0")
        if self.session_id is not None:
            sid = q(self.session_id)
            if self.exclude_whole_session:
                parts.append(f"session_id <> {sid}")
            else:
                conds = []
                if self.exclude_from_ts is not None:
                    conds.append(f"ts >= {int(self.exclude_from_ts)}")
                if self.exclude_user_texts:
                    texts = ", ".join(q(t) for t in self.exclude_user_texts)
                    conds.append(f"coalesce(user_text, '') IN ({texts})")
                if conds:
                    parts.append(f"NOT (session_id = {sid} AND ({' OR '.join(conds)}))")
        if vector and self.min_ts is not None:
            parts.append(f"ts >= {int(self.min_ts)}")
        if vector and with_tags and self.tags:
            arr = ", ".join(q(t) for t in self.tags)
            parts.append(f"array_has_any(tags, make_array({arr}))")
        return " AND ".join(f"({p})" for p in parts)

    def accepts(
        self, row: Mapping[str, Any], *, vector: bool = False, with_tags: bool = False
    ) -> bool:
        if not Scope.visible(self.namespace or Namespace()).accepts(row):
            return False
        if not self.include_low_value and not float(row.get("priority") or 0) > 0:
            return False
        if self.session_id is not None and row.get("session_id") == self.session_id:
            if self.exclude_whole_session:
                return False
            if self.exclude_from_ts is not None and int(row.get("ts") or 0) >= self.exclude_from_ts:
                return False
            if (row.get("user_text") or "") in self.exclude_user_texts:
                return False
        if vector and self.min_ts is not None and int(row.get("ts") or 0) < self.min_ts:
            return False
        return not (
            vector and with_tags and self.tags and not set(self.tags) & set(row.get("tags") or ())
        )


def visible_context(
    hints: Mapping[str, Any], session_id: str | None, *, reason: str, lightweight: bool
) -> dict[str, Any]:
    """TraceFilter kwargs for "don't recall what the model can already see" (turn_start only).

    A host that reports its visible context gets exactly that excluded (in both modes); without a
    report, full mode excludes the whole current session (memos-core §5.7.3) and lightweight nothing.
    """
    if reason != "turn_start" or not session_id:
        return {}
    if hints.get("visibleContextKnown") or hints.get("visible_context_known"):
        start = hints.get("visibleContextStartTs", hints.get("visible_context_start_ts"))
        texts: Sequence[Any] = (
            hints.get("visibleContextUserTexts") or hints.get("visible_context_user_texts") or ()
        )
        return {
            "session_id": session_id,
            "exclude_from_ts": int(start) if isinstance(start, int | float) else None,
            "exclude_user_texts": tuple(str(t) for t in list(texts)[-MAX_VISIBLE_TEXTS:]),
        }
    if lightweight:
        return {}
    return {"session_id": session_id, "exclude_whole_session": True}


def simple_where(namespace: Namespace | None, extra: Sequence[str] = ()) -> str:
    return Scope.visible(namespace or Namespace()).where_and(*extra)
