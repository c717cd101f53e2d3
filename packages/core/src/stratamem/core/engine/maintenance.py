"""The core's background upkeep: build indexes, optimize/compact LanceDB when due, and retry
embeddings that failed at capture time (with exponential back-off)."""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass, field
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.engine.services import EngineServices
from stratamem.core.ids import now_ms
from stratamem.core.storage import allocator
from stratamem.core.telemetry import get_logger

_log = get_logger("core")


@dataclass
class Clock:
    """When maintenance last optimized and last trimmed (``time.monotonic``)."""

    optimized: float = field(default_factory=time.monotonic)
    trimmed: float = field(default_factory=time.monotonic)


async def maintenance_loop(svc: EngineServices) -> None:
    """Runs until cancelled; a failed round is logged and the loop goes on."""
    interval = float(svc.config["storage"]["optimize_interval_s"])
    clock = Clock()
    while True:
        await asyncio.sleep(min(interval, 5.0))
        try:
            await maintenance_round(svc, clock)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _log.warning("maintenance.failed", error=str(exc))


async def maintenance_round(svc: EngineServices, clock: Clock) -> None:
    """One round: indexes, an optimize when due, embedding retries, then ``malloc_trim`` after
    an optimize (its compaction and dropped LanceDB session left 11-20 MB freed but resident a
    round in the soak) or every ``storage.malloc_trim_interval_s``."""
    cfg = svc.config["storage"]
    trim_every = float(cfg["malloc_trim_interval_s"])
    await svc.store.ensure_indexes()
    heavy = False
    due = time.monotonic() - clock.optimized >= float(cfg["optimize_interval_s"])
    if due or svc.store.rows_since_optimize >= int(cfg["optimize_after_rows"]):
        await svc.store.optimize()
        clock.optimized = time.monotonic()
        heavy = True
    await retry_embeddings(svc)
    if trim_every > 0 and (heavy or time.monotonic() - clock.trimmed >= trim_every):
        await asyncio.to_thread(allocator.trim)  # off the loop: it walks every arena
        clock.trimmed = time.monotonic()


JOURNAL_ACTIONS = ("list", "retry", "discard")


async def journal_action(writer: Any, action: str, seqs: list[int] | None) -> dict[str, Any]:
    """``stratamem journal list|retry|discard`` on the running writer: a requeued entry is back in
    its queue (and the writer woken) before this returns."""
    if action not in JOURNAL_ACTIONS:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT,
            f"journal action must be one of {', '.join(JOURNAL_ACTIONS)}, got {action!r}",
            {"field": "action"},
        )
    if action == "list":
        return {"set_aside": await writer.set_aside()}
    if action == "retry":
        return {"requeued": await writer.retry_set_aside(seqs)}
    return {"discarded": await writer.discard_set_aside(seqs)}


async def retry_embeddings(svc: EngineServices) -> None:
    """One page of due embedding retries: embed, write the vector, record the outcome."""
    if svc.embedder is None:
        return
    due = await svc.run_db(lambda: svc.db.embedding_retries_due(25))
    for job in due:
        try:
            text = str(job["source_text"])
            vec = (await svc.run_cpu(functools.partial(svc.embed_documents, [text])))[0]
            await svc.store.update("traces", job["target_id"], {job["vector_field"]: vec.tolist()})
            status, err = "succeeded", None
        except Exception as exc:
            err = str(exc)
            status = "failed" if job["attempts"] + 1 >= job["max_attempts"] else "pending"
        attempts = job["attempts"] + 1
        backoff = min(3_600_000, 60_000 * 2 ** (attempts - 1))
        params = (status, attempts, err, now_ms() + backoff, job["id"])
        await svc.run_db(functools.partial(_update_retry, svc, params))


def _update_retry(svc: EngineServices, params: tuple[Any, ...]) -> None:
    svc.db.call(
        lambda c: c.execute(
            "UPDATE embedding_retry_queue SET status=?, attempts=?, last_error=?,"
            " next_attempt_at=? WHERE id=?",
            params,
        )
    )
