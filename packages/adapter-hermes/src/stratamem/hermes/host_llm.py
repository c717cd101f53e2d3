"""Lend Hermes' own model to the core as its ``host`` LLM (Hermes 0.19: ``agent.plugin_llm.PluginLlm``).

``PluginLlm.complete`` runs the user's active model with Hermes' own auth and routing; Stratamem never
sees a key. With ``lend_llm`` on, the Hermes process keeps one ``HostLlm`` stream open to the home's
service (the host kit's ``HostLlmLender``) offering its model as the default: the service uses it
while the stream is open if its config names no LLM provider (a configured provider wins; Hermes is
then only its fallback).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("stratamem.hermes")

PLUGIN_ID = "stratamem"
_lock = threading.Lock()
_lease: dict[str, Any] = {"count": 0, "lender": None}
#: how long the lender waits for the home's service each time it (re)connects
CONNECT_BUDGET_S = 10.0


def hermes_complete_fn() -> Callable[..., dict[str, Any]] | None:
    """A ``register_host_llm`` callable over Hermes' plugin LLM facade, or None if Hermes lacks it."""
    try:
        from agent.plugin_llm import PluginLlm
    except ImportError:
        return None
    llm = PluginLlm(plugin_id=PLUGIN_ID)

    def complete(
        messages: Sequence[Any],
        *,
        json_mode: bool = False,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_ms: int = 60000,
        **_: Any,
    ) -> dict[str, Any]:
        msgs = [dict(m) for m in messages]
        result = llm.complete(
            msgs,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=max(1.0, timeout_ms / 1000.0),
            purpose="stratamem-memory",
        )
        usage = getattr(result, "usage", None)
        return {
            "text": result.text,
            "model": result.model,
            "usage": {
                "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
                "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
                "total_tokens": int(getattr(usage, "total_tokens", 0) or 0),
            },
        }

    return complete


def lend(home: Path) -> bool:
    """Lend Hermes' model to ``home``'s service (once per process, reference counted)."""
    with _lock:
        if _lease["count"] == 0:
            fn = hermes_complete_fn()
            if fn is None:
                return False
            from stratamem.contract.hostkit.client import ensure_service
            from stratamem.contract.hostkit.host_llm import HostLlmLender

            def connect() -> str:
                # the provider's own connection starts the service; the lender only finds it
                return "unix:" + ensure_service(home, CONNECT_BUDGET_S, start=False)

            _lease["lender"] = HostLlmLender(connect, fn, host="hermes", as_default=True).start()
            log.info("stratamem: Hermes' model is lent to the home's service as its host LLM")
        _lease["count"] += 1
        return True


def lender() -> Any:
    """The running ``HostLlmLender`` of this process, if any."""
    return _lease["lender"]


def unlend() -> None:
    with _lock:
        if _lease["count"] == 0:
            return
        _lease["count"] -= 1
        if _lease["count"] == 0 and _lease["lender"] is not None:
            _lease["lender"].close()
            _lease["lender"] = None
