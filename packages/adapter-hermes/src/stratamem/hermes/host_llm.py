"""Lend Hermes' own model to the core as its ``host`` LLM (Hermes 0.19: ``agent.plugin_llm.PluginLlm``).

``PluginLlm.complete`` runs the user's active model with Hermes' own auth and routing; Stratamem never
sees a key. Used only when Stratamem has no LLM of its own and ``lend_llm`` is on.
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
_lease: dict[str, Any] = {"count": 0, "unregister": None}


def core_has_llm(home: Path) -> bool:
    """Whether the home's own config names an LLM provider (then nothing is lent)."""
    try:
        from stratamem.core.config import load_config

        cfg = load_config(home, {})
    except Exception:
        return False
    provider = str((cfg.get("llm") or {}).get("provider") or "").strip().lower()
    return provider not in ("", "none")


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


def lend() -> bool:
    """Register Hermes' model in the core's host registry (once per process, reference counted)."""
    with _lock:
        if _lease["count"] == 0:
            fn = hermes_complete_fn()
            if fn is None:
                return False
            from stratamem.core.llm import register_host_llm

            _lease["unregister"] = register_host_llm(fn, name="hermes")
            log.info("stratamem: Hermes' model is lent to the core as its host LLM")
        _lease["count"] += 1
        return True


def unlend() -> None:
    with _lock:
        if _lease["count"] == 0:
            return
        _lease["count"] -= 1
        if _lease["count"] == 0 and _lease["unregister"] is not None:
            _lease["unregister"]()
            _lease["unregister"] = None
