"""Compatibility name for the visibility filter; the rule itself lives in ``storage.ownership``."""

from __future__ import annotations

from stratamem.contract.dtos import Namespace
from stratamem.core.storage.ownership import Scope


def visibility_where(ns: Namespace | None, *, all_namespaces: bool = False) -> str:
    """Filter for rows visible to ``ns`` (``true`` only when explicitly unscoped)."""
    if all_namespaces:
        return Scope.everything("include_all_namespaces").where
    return Scope.visible(ns or Namespace()).where
