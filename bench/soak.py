"""Soak: many turns through turn_end (a turn_start every 25, each session closed when the next one
starts) with the core's own scheduled maintenance; disk bytes, fragments, retained versions, journal
rows and backlog, the engine's per-session state and RSS sampled over time."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import AGENT
from bench.longmem import conversation_stream
from bench.machine import rss_mb
from bench.scaling import dir_bytes


async def _versions(tbl: Any) -> int | None:
    try:
        return len(await tbl.list_versions())
    except Exception:
        return None


async def _sample(core: Any, home: Path, turns: int, t0: float) -> dict[str, Any]:
    tbl = core.store.table("traces")
    stats = (await core.store.stats()).get("traces", {})
    return {
        "turns": turns,
        "elapsed_s": round(time.perf_counter() - t0, 1),
        "rows": stats.get("rows"),
        "disk_mb": round(dir_bytes(home / "data") / 1e6, 2),
        "fragments": stats.get("fragments"),
        "version": stats.get("version"),
        "versions_retained": await _versions(tbl),
        "backlog": len(core.journal.pending),
        "journal_rows": int(core.db.query("SELECT count(*) FROM journal")[0][0]),
        "rss_mb": rss_mb(),
        "state": _state(core),
    }


def _state(core: Any) -> dict[str, int]:
    """Per-session/per-episode state the engine holds in memory (must not grow with turns)."""
    services = getattr(core, "services", None)
    sizes = getattr(services, "state_sizes", None)
    return dict(sizes()) if sizes is not None else {}


async def run_soak(
    embedder: Any, turns: int, every: int, seed: int, overrides: dict[str, Any]
) -> dict[str, Any]:
    from stratamem.contract.dtos import Namespace, TurnInput, TurnResult
    from stratamem.core.engine.assemble import open_local_core

    ns = Namespace(agent_kind=AGENT)
    stream = conversation_stream(seed + 11, turns)
    curve: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        home = Path(tmp)
        core = await open_local_core(home, embedder=embedder, **overrides)
        try:
            cfg = core.config["storage"]
            t0 = time.perf_counter()
            curve.append(await _sample(core, home, 0, t0))
            prev: str | None = None
            for i, (sid, user, agent) in enumerate(stream, start=1):
                if prev is not None and sid != prev:  # a host closes a session it is done with
                    await core.close_session(prev)
                prev = sid
                now = int(time.time() * 1000)
                if i % 25 == 0:
                    await core.turn_start(
                        TurnInput(agent=AGENT, session_id=sid, user_text=user, ts=now, namespace=ns)
                    )
                await core.turn_end(
                    TurnResult(
                        agent=AGENT,
                        session_id=sid,
                        agent_text=agent,
                        ts=now,
                        user_text=user,
                        namespace=ns,
                    )
                )
                if i % every == 0:
                    curve.append(await _sample(core, home, i, t0))
            await core.flush(600)
            curve.append(await _sample(core, home, turns, t0) | {"note": "after flush"})
            await core.store.optimize()
            curve.append(await _sample(core, home, turns, t0) | {"note": "after optimize"})
        finally:
            await core.shutdown()
    return {
        "turns": turns,
        "maintenance": {
            k: cfg[k]
            for k in ("optimize_interval_s", "optimize_after_rows", "cleanup_older_than_s")
        },
        "curve": curve,
    }
