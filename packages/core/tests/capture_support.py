"""Fill a home through the public capture path (``turn_end`` + ``flush``), as the retrieval tests
do: one definition, so a change to how turns are captured reaches every such test."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import Namespace, TurnResult
from stratamem.core.engine.assemble import open_local_core

#: (session date in ms, [(user turn, assistant turn)]): one memory per pair of turns
Sessions = Sequence[tuple[int, Sequence[tuple[str, str]]]]


async def capture_texts(
    core: Any, texts: Sequence[str], ns: Namespace, t0: int, *, session_id: str = "s1"
) -> None:
    """One user turn per text, a minute apart, each answered "Noted."; then wait for the writer."""
    for i, text in enumerate(texts):
        await core.turn_end(
            TurnResult(
                agent=ns.agent_kind,
                session_id=session_id,
                user_text=text,
                agent_text="Noted.",
                ts=t0 + i * 60_000,
                namespace=ns,
            )
        )
    await core.flush(60)


async def ingest_sessions(home: Path, sessions: Sessions, ns: Namespace) -> dict[str, str]:
    """Every pair of turns through ``turn_end`` (session ``s<i>``); trace id -> "session.turn"."""
    core = await open_local_core(home)
    keys: dict[str, str] = {}
    try:
        for s, (when, turns) in enumerate(sessions):
            for i, (user, agent) in enumerate(turns):
                ack = await core.turn_end(
                    TurnResult(
                        agent=ns.agent_kind,
                        session_id=f"s{s}",
                        agent_text=agent,
                        user_text=user,
                        ts=when,
                        namespace=ns,
                    )
                )
                keys[ack.trace_id] = f"{s}.{i}"
        await core.flush(60)
    finally:
        await core.shutdown()
    return keys
