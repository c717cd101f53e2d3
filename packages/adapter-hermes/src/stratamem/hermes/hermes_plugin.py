"""What Hermes loads: ``register(ctx)`` for the user-plugin folder and the entry-point group."""

from __future__ import annotations

from typing import Any

from stratamem.hermes.provider import StratamemMemoryProvider


def register(ctx: Any) -> None:
    """Hermes' plugin entry: one provider instance per load."""
    ctx.register_memory_provider(StratamemMemoryProvider())


__all__ = ["StratamemMemoryProvider", "register"]
