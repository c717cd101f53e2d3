"""``open_core``: the one way to get a home's core — the local engine when this process can own the
home, else a remote client of its owner. Sits above both (``engine.assemble`` and
``server.connect``) so neither imports the other's user."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from stratamem.core.server.connect import open_or_connect


@contextlib.asynccontextmanager
async def open_core(
    home: str | os.PathLike[str] | None = None,
    *,
    embedder: Any = None,
    host: str | None = None,
    **config_overrides: Any,
) -> AsyncIterator[Any]:
    """Open (and own) a home: lock, config, SQLite, LanceDB, journal replay; shut down on exit.

    The owner also serves the home on its Unix socket; when another process owns the home, this
    yields a ``RemoteCore`` connected to that owner instead (``stratamem.core.server.connect``).
    ``embedder`` lets a caller share one already-loaded embedder between cores (tests, servers).
    Config overrides use dotted or double-underscore keys (``retrieval__tier2_top_k=7``).
    """
    async with open_or_connect(home, embedder=embedder, host=host, **config_overrides) as core:
        yield core
