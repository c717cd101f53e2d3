"""The one ownership rule (reference/memos-core.md §2.2), as filter strings and as Python predicates.

A row's owner is its agent kind + profile (missing kind = ``unknown``, missing profile = ``default``).

* **visible** to namespace N: owner kind ``unknown`` (legacy rows), or same kind and profile, or shared
  ``public``/``local`` with N's kind, or shared ``hub``. Nothing else widens it.
* **owned** by N (updates, deletes, archive, status changes, learning's own reads): same kind and
  profile, exactly. Sharing never grants a write.

Every read and write below the facade states its :class:`Scope`; the storage layer takes a scope,
not a free filter, so there is no unfiltered read except ``Scope.maintenance(job)`` for a named job.
The filter strings are valid in LanceDB (DataFusion) and in SQLite (sessions have no share column:
filter them with :func:`owned_where`). :func:`quote` is the only string-literal quoting helper.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from stratamem.contract.dtos import Namespace

UNKNOWN_KIND = "unknown"
DEFAULT_PROFILE = "default"
#: share scopes that widen visibility to the owner's agent kind ("local" is the legacy spelling)
KIND_SCOPES = ("public", "local")
HUB_SCOPE = "hub"


def quote(value: object) -> str:
    """A SQL/LanceDB string literal (single quotes doubled)."""
    return "'" + str(value).replace("'", "''") + "'"


def ids_where(ids: Iterable[str], column: str = "id") -> str:
    """``<column> IN (...)`` for a list of ids (``false`` when empty)."""
    quoted = ", ".join(quote(i) for i in ids)
    return f"{column} IN ({quoted})" if quoted else "false"


# -- owners ---------------------------------------------------------------------------------------
def ns_kind(ns: Namespace) -> str:
    return ns.agent_kind or UNKNOWN_KIND


def ns_profile(ns: Namespace) -> str:
    return ns.profile_id or DEFAULT_PROFILE


def row_kind(row: Mapping[str, Any]) -> str:
    return str(row.get("owner_agent_kind") or UNKNOWN_KIND)


def row_profile(row: Mapping[str, Any]) -> str:
    return str(row.get("owner_profile_id") or DEFAULT_PROFILE)


def owner_namespace(row: Mapping[str, Any]) -> Namespace:
    """The namespace that owns ``row`` (kind + profile + workspace)."""
    return Namespace(
        agent_kind=row_kind(row),
        profile_id=row_profile(row),
        workspace_id=row.get("owner_workspace_id"),
    )


def owner_key(ns: Namespace) -> tuple[str, str]:
    """What ownership compares: (agent kind, profile)."""
    return ns_kind(ns), ns_profile(ns)


def owner_columns(ns: Namespace) -> dict[str, Any]:
    """The owner columns a new row of ``ns`` carries."""
    return {
        "owner_agent_kind": ns_kind(ns),
        "owner_profile_id": ns_profile(ns),
        "owner_workspace_id": ns.workspace_id,
    }


# -- the rule: filter strings ---------------------------------------------------------------------
def visible_where(ns: Namespace) -> str:
    """Filter for rows visible to ``ns`` (rows with a ``share_scope`` column)."""
    kind, profile = quote(ns_kind(ns)), quote(ns_profile(ns))
    scopes = ", ".join(quote(s) for s in KIND_SCOPES)
    return (
        f"(owner_agent_kind = {quote(UNKNOWN_KIND)}"
        f" OR (owner_agent_kind = {kind} AND owner_profile_id = {profile})"
        f" OR (share_scope IN ({scopes}) AND owner_agent_kind = {kind})"
        f" OR share_scope = {quote(HUB_SCOPE)})"
    )


def owned_where(ns: Namespace) -> str:
    """Filter for rows owned by ``ns`` (same agent kind and profile)."""
    return (
        f"(owner_agent_kind = {quote(ns_kind(ns))} AND owner_profile_id = {quote(ns_profile(ns))})"
    )


# -- the rule: Python predicates (rows not in a store yet, e.g. pending journal rows) ---------------
def is_visible(row: Mapping[str, Any], ns: Namespace) -> bool:
    kind, scope = row_kind(row), str(row.get("share_scope") or "private")
    return (
        kind == UNKNOWN_KIND
        or (kind == ns_kind(ns) and row_profile(row) == ns_profile(ns))
        or (scope in KIND_SCOPES and kind == ns_kind(ns))
        or scope == HUB_SCOPE
    )


def is_owned(row: Mapping[str, Any], ns: Namespace) -> bool:
    return row_kind(row) == ns_kind(ns) and row_profile(row) == ns_profile(ns)


def is_shared(row: Mapping[str, Any]) -> bool:
    """Whether ``row`` may be visible beyond its owner (legacy owner, or shared): a namespace sees
    only shared rows and the rows it owns, whatever the rest of the rule says."""
    scope = str(row.get("share_scope") or "private")
    return row_kind(row) == UNKNOWN_KIND or scope in KIND_SCOPES or scope == HUB_SCOPE


def shared_where() -> str:
    """Filter for the rows :func:`is_shared` accepts (the owner columns are non-null)."""
    scopes = ", ".join(quote(s) for s in (*KIND_SCOPES, HUB_SCOPE))
    return f"(owner_agent_kind IN ({quote(UNKNOWN_KIND)}, '') OR share_scope IN ({scopes}))"


def owners_where(owners: Iterable[tuple[str, str]]) -> str:
    """Filter for the rows owned by any of ``owners`` ((agent kind, profile) pairs; ``false``
    when none), with the predicates' defaults for empty profiles."""
    parts = []
    for kind, profile in sorted(owners):
        profiles = [quote(profile)] + (["''"] if profile == DEFAULT_PROFILE else [])
        parts.append(
            f"(owner_agent_kind = {quote(kind)} AND owner_profile_id IN ({', '.join(profiles)}))"
        )
    return "(" + " OR ".join(parts) + ")" if parts else "false"


def same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Both rows belong to one owner (learning never mixes two owners' rows)."""
    return row_kind(a) == row_kind(b) and row_profile(a) == row_profile(b)


# -- scopes ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Scope:
    """Which rows one storage call may touch. Build one with :meth:`visible`, :meth:`owned`,
    :meth:`of_row` or (maintenance jobs, explicit all-namespace listings) :meth:`everything`."""

    mode: Literal["visible", "owned", "everything"]
    namespace: Namespace | None = None
    #: why an ``everything`` scope exists (a named maintenance job or listing), for the log
    job: str | None = None

    @classmethod
    def visible(cls, ns: Namespace) -> Scope:
        return cls("visible", ns)

    @classmethod
    def owned(cls, ns: Namespace) -> Scope:
        return cls("owned", ns)

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> Scope:
        """Rows owned by ``row``'s owner (learning reads that follow one row)."""
        return cls("owned", owner_namespace(row))

    @classmethod
    def everything(cls, job: str) -> Scope:
        if not job:
            raise ValueError("an unfiltered scope needs the name of its job")
        return cls("everything", None, job)

    @property
    def where(self) -> str:
        if self.mode == "everything":
            return "true"
        assert self.namespace is not None
        return (
            visible_where(self.namespace) if self.mode == "visible" else owned_where(self.namespace)
        )

    def where_and(self, *extra: str | None) -> str:
        """This scope's filter AND-ed with ``extra`` filters (``None``/empty ones skipped)."""
        parts = [self.where, *(e for e in extra if e)]
        if len(parts) == 1:
            return parts[0]
        return " AND ".join(f"({p})" for p in parts)

    def accepts(self, row: Mapping[str, Any]) -> bool:
        if self.mode == "everything":
            return True
        assert self.namespace is not None
        if self.mode == "visible":
            return is_visible(row, self.namespace)
        return is_owned(row, self.namespace)
