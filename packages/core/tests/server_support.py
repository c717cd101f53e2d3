"""A home served over TCP loopback with scoped tokens, for tests of what a token may do."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import ServeOptions, Service

ADMIN_TOKEN = "admin-token"


def write_tokens(home: Path, tokens: Mapping[str, Sequence[str]]) -> None:
    """A config with no embedder and ``tokens`` (token -> the namespaces it may act in)."""
    home.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"    {t}: [{', '.join(repr(n) for n in ns)}]\n" for t, ns in tokens.items())
    text = f"embedding:\n  provider: none\nserver:\n  tokens:\n{lines}"
    (home / "config.yaml").write_text(text, encoding="utf-8")


@contextlib.asynccontextmanager
async def tcp_service(home: Path) -> AsyncIterator[Service]:
    """``home``'s core served on 127.0.0.1 (a free port), ``ADMIN_TOKEN`` unrestricted."""
    core = await open_local_core(home)
    svc = await Service(core, ServeOptions(listen=["127.0.0.1:0"], token=ADMIN_TOKEN)).start()
    try:
        yield svc
    finally:
        await svc.stop(1.0)
        await core.shutdown()
