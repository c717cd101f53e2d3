"""Admin actions, one line each, to ``<home>/logs/audit.log`` (the ``audit`` channel).

Deletes, config changes, skill archives, policy status changes, journal retries and discards, and
refused tokens/namespaces (gRPC and viewer): who did what to which rows.
Values are never written (a config change lists its keys only); redaction applies as everywhere.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from stratamem.contract.dtos import Namespace
from stratamem.core.telemetry.logs import AUDIT, get_logger

_log = get_logger(AUDIT)


def audit(
    action: str,
    *,
    actor: str = "core",
    namespace: Namespace | None = None,
    target: str | Sequence[str] | None = None,
    **detail: Any,
) -> None:
    """Record one admin action (never raises: auditing must not break the action)."""
    ns = None if namespace is None else f"{namespace.agent_kind}/{namespace.profile_id}"
    with contextlib.suppress(Exception):  # a broken sink never fails the caller
        _log.info(
            action,
            actor=actor,
            namespace=ns,
            target=target if target is None or isinstance(target, str) else list(target),
            **detail,
        )
