"""``open_local_core``: build a started ``LocalCore`` from a home — resolve and prepare the home,
load the config, take the home's lock, open SQLite and LanceDB, load the embedder and the LLM,
resolve the memory mode, replay the journal. Anything opened is closed again if a step fails."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from stratamem.contract.errors import StratamemError
from stratamem.core.config import ensure_config_file, load_config
from stratamem.core.config.defaults import DEFAULTS
from stratamem.core.config.loader import (
    CONFIG_FILE,
    deep_merge,
    overrides_to_tree,
    read_user_config,
)
from stratamem.core.home import prepare_home, resolve_home
from stratamem.core.local import LocalCore
from stratamem.core.plugins import announce_core_started, attach_event_observers
from stratamem.core.storage import allocator
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.lock import HomeLock
from stratamem.core.storage.sqlite import Database
from stratamem.core.telemetry import get_logger

_log = get_logger("core")


def load_embedder(section: dict[str, Any]) -> Any:
    """The configured embedder, or ``None`` for provider ``none``."""
    if section.get("provider") in ("none", "", None):
        return None
    from stratamem.core import embedding  # loads onnxruntime: only when an embedder is wanted

    loader: Callable[[dict[str, Any]], Any] = embedding.load_embedder
    return loader(section)


def load_llm(cfg: dict[str, Any]) -> Any:
    """The configured LLM, or ``None``; an optional provider that fails to load is logged."""
    from stratamem.core.llm import load_llm as load

    if not cfg["llm"].get("provider"):
        return None
    try:
        return load(cfg)
    except StratamemError:
        raise
    except Exception as exc:  # an optional provider must not keep the core from starting
        _log.warning("llm.unavailable", error=str(exc))
        return None


async def open_local_core(
    home: str | os.PathLike[str] | None = None,
    *,
    embedder: Any = None,
    host: str | None = None,
    **config_overrides: Any,
) -> LocalCore:
    """Like ``open_core`` without the context manager (the caller must ``shutdown()``)."""
    from stratamem.core.learning.mode import resolve_mode

    # before the executor's and the embedder's threads make their own malloc arenas (the home's
    # config file is read on one of them: the defaults and the overrides given here apply)
    allocator.prepare_process(
        {**DEFAULTS["storage"], **overrides_to_tree(config_overrides).get("storage", {})}
    )
    path = resolve_home(home, host=host)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, prepare_home, path)
    cfg = await loop.run_in_executor(None, lambda: load_config(path, config_overrides))
    await loop.run_in_executor(None, ensure_config_file, path)
    lock = HomeLock(path).acquire()
    db: Database | None = None
    store: LanceStore | None = None
    try:
        db = await loop.run_in_executor(
            None,
            lambda: Database(
                path / "data" / "stratamem.db", int(cfg["storage"]["sqlite_busy_timeout_ms"])
            ),
        )
        emb = embedder
        if emb is None:
            emb = await loop.run_in_executor(None, lambda: load_embedder(cfg["embedding"]))
        dim = int(getattr(emb, "dimension", 0) or 0) or 384
        model = str(getattr(emb, "model", "") or "none")
        store = await LanceStore(path / "data" / "lance", dim, model, cfg["storage"]).open()
        user = deep_merge(read_user_config(path / CONFIG_FILE), overrides_to_tree(config_overrides))
        lightweight, mode_reason = resolve_mode(user, cfg)
        cfg["algorithm"]["lightweight_memory"]["enabled"] = lightweight
        llm = load_llm(cfg)
        core = LocalCore(
            path,
            cfg,
            db=db,
            store=store,
            lock=lock,
            embedder=emb,
            llm=llm,
            owns_embedder=embedder is None,
        )
        core.mode_reason = mode_reason
        attach_event_observers(core.bus)  # plugins see the start-up events too
        await core.start()
        announce_core_started(core)
        return core
    except BaseException:
        if store is not None:
            store.close()
        if db is not None:
            db.close()
        lock.release()
        raise
