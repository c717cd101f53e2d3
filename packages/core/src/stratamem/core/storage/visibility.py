"""The one namespace predicate every read path applies at the storage boundary.

Visibility (reference/memos-core.md §2.2): a row is visible to namespace N when its owner agent kind is
unknown, or owner agent kind and profile equal N's, or it is shared ``public`` with N's agent kind, or
shared ``hub``. Nothing else widens it.
"""

from __future__ import annotations

from stratamem.contract.dtos import Namespace


def _q(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def visibility_where(ns: Namespace | None, *, all_namespaces: bool = False) -> str:
    """SQL/LanceDB filter string for rows visible to ``ns`` (``true`` only when explicitly unscoped)."""
    if all_namespaces:
        return "true"
    ns = ns or Namespace()
    kind, profile = _q(ns.agent_kind), _q(ns.profile_id or "default")
    return (
        "(owner_agent_kind = 'unknown'"
        f" OR (owner_agent_kind = {kind} AND owner_profile_id = {profile})"
        f" OR (share_scope IN ('public', 'local') AND owner_agent_kind = {kind})"
        " OR share_scope = 'hub')"
    )
