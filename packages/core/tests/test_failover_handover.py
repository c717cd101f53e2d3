"""What a client's calls do while the home's owner is handed over (issue 16, item 8's follow-ups).

Real processes on one real home. The owner (``open_core``'s ``LocalCore`` serving its socket, or a
``stratamem serve`` started by the host kit's client) exits cleanly or is SIGKILLed; a holder
process then takes the home's lock and does not serve until the test lets it go, so the hand-over
takes as long as the test wants (no timing luck):

- a recall carrying the host's deadline returns by it, with the core's safe cut-off, instead of
  waiting for the hand-over (up to the 60 s start budget); the hand-over goes on and later calls
  reach the new owner;
- a ``turn_end`` (or a sub-agent's outcome) without a turn key whose answer was lost with its owner
  (the owner had journaled it) is resent and answered with the first acknowledgement, not stored
  twice;
- a read still in flight when the owner leaves cleanly is resent to the new owner (a guard: its
  drain ends such a call with a bare ``unavailable``, "Cancelling all calls", which the client
  already resent; it passes on the old code too).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from failover_support import HOLDER, OWNER, STEP_S, Proc, owner_leaves
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.contract.dtos import (
    ListQuery,
    Namespace,
    RetrievalQuery,
    SubagentOutcome,
    TurnInput,
    TurnResult,
)
from stratamem.contract.hostkit.client import (
    connect_blocking,
    live_socket,
    owner_record,
    read_serve_json,
)

NS = Namespace(agent_kind="hermes")
#: the caller's deadline, and the generous bound it must be kept within while the hand-over lasts
DEADLINE_MS = 1000
WITHIN_S = 10.0


def _now() -> int:
    return int(time.time() * 1000)


def _turn(text: str, key: str | None = None) -> TurnResult:
    return TurnResult(
        agent="hermes",
        session_id="handover-s",
        agent_text="noted",
        user_text=text,
        namespace=NS,
        ts=_now(),
        turn_key=key,
    )


def _recall() -> RetrievalQuery:
    return RetrievalQuery(
        agent="hermes",
        query="kestrel",
        namespace=NS,
        reason="turn_start",
        deadline_at=_now() + DEADLINE_MS,
    )


def _turn_start() -> TurnInput:
    return TurnInput(
        agent="hermes",
        session_id="handover-s",
        user_text="how many kestrels?",
        ts=_now(),
        namespace=NS,
        turn_key="start-1",
        deadline_at=_now() + DEADLINE_MS,
    )


async def _release(holder: Proc) -> None:
    assert holder.proc.stdin is not None
    holder.proc.stdin.close()
    assert await holder.exit_code() == 0, holder.stderr()


async def _timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    # the old client waited for the hand-over: past this it fails instead of hanging the test
    result = await asyncio.wait_for(call, 3 * WITHIN_S)
    return result, time.monotonic() - started


@pytest.mark.parametrize("how", ["clean", "sigkill"])
async def test_a_recall_with_a_deadline_returns_by_it_while_the_home_is_handed_over(
    tmp_path: Path, how: str
) -> None:
    from stratamem.core import open_core

    home = tmp_path / "home"
    owner = await Proc.start(tmp_path, "owner", OWNER, str(home))
    holder: Proc | None = None
    try:
        assert await owner.line() == "LocalCore"
        async with open_core(home, embedding__provider="none") as core:
            assert type(core).__name__ == "RemoteCore"
            ack = await core.turn_end(_turn("fact: the kestrel count is 4", "k-1"))
            await owner_leaves(owner, how)
            holder = await Proc.start(tmp_path, "holder", HOLDER, str(home))
            assert await holder.line() == "locked"  # the next owner, not serving until released

            found, took = await _timed(core.search(_recall()))
            assert took < WITHIN_S, took
            assert found.cut_off and found.hits == () and found.injected_context == ""
            assert core.recovering  # the hand-over goes on in the background
            started, took = await _timed(core.turn_start(_turn_start()))
            assert took < WITHIN_S, took
            assert started.cut_off and started.hits == ()
            assert started.query.session_id == "handover-s"

            await _release(holder)  # the hand-over ends: this process takes the home over
            listed = await asyncio.wait_for(core.list_traces(ListQuery(namespace=NS)), STEP_S)
            assert [t.id for t in listed] == [ack.trace_id]
            assert (owner_record(home) or {}).get("pid") == os.getpid()
            again = await asyncio.wait_for(core.search(_recall()), STEP_S)
            assert not again.cut_off and again.hits
    finally:
        for p in (owner, holder):
            if p is not None:
                p.kill()


async def test_the_host_kits_client_keeps_a_recalls_deadline_while_its_service_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thin client the hosts use (``connect_blocking``, Hermes' path): its service is
    SIGKILLed and the next one cannot start until the holder goes; a recall with a deadline
    returns its cut-off by then, and the call after the holder left starts a new service."""
    home = tmp_path / "home"
    monkeypatch.setenv("STRATAMEM_EMBEDDING__PROVIDER", "none")  # the services it starts inherit it
    holder: Proc | None = None
    core = await asyncio.to_thread(connect_blocking, home)
    try:
        ack = await asyncio.to_thread(core.turn_end, _turn("fact: the kestrel count is 4", "k-1"))
        first = (owner_record(home) or {}).get("pid")
        assert isinstance(first, int)
        os.kill(first, signal.SIGKILL)
        end = time.monotonic() + STEP_S
        while owner_record(home) is not None:
            assert time.monotonic() < end, "the killed service still owns the home"
            await asyncio.sleep(0.02)
        holder = await Proc.start(tmp_path, "holder", HOLDER, str(home))
        assert await holder.line() == "locked"

        found, took = await _timed(asyncio.to_thread(core.search, _recall()))
        assert took < WITHIN_S, took
        assert found.cut_off and found.hits == ()

        await _release(holder)
        listed = await asyncio.to_thread(core.list_traces, ListQuery(namespace=NS))
        assert [t.id for t in listed] == [ack.trace_id]
        assert (owner_record(home) or {}).get("pid") not in (None, first, os.getpid())
    finally:
        await asyncio.to_thread(core.close)
        if holder is not None:
            holder.kill()


class Proxy:
    """A Unix socket forwarding to the owner's; once ``lose_answers`` is set, what the owner sends
    never reaches the client (an answer lost with its owner: the owner has done the work)."""

    def __init__(self, path: Path, upstream: str) -> None:
        self.path, self.upstream = path, upstream
        self.lose_answers = False
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Proxy:
        self._server = await asyncio.start_unix_server(self._serve, str(self.path))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(self.upstream)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, answers: bool) -> None:
            try:
                while data := await src.read(65536):
                    if answers and self.lose_answers:
                        continue
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        await asyncio.gather(
            pump(reader, up_writer, False), pump(up_reader, writer, True), return_exceptions=True
        )


def _journaled(home: Path, text: str) -> int:
    """How many turns with ``text`` the home's journal holds (read beside its owner)."""
    with contextlib.closing(sqlite3.connect(home / "data" / "stratamem.db", timeout=5)) as db:
        rows = db.execute("SELECT payload_json FROM journal").fetchall()
    return sum(1 for (payload,) in rows if text in payload)


@contextlib.asynccontextmanager
async def _through_proxy(tmp_path: Path, home: Path) -> AsyncIterator[tuple[Any, Proxy]]:
    """``open_core``'s client for ``home`` whose first channel runs through a ``Proxy`` (its
    transport failures find or become the next owner, as ``open_core``'s do)."""
    from stratamem.core.engine.assemble import open_local_core
    from stratamem.core.server.connect import _following_owner

    sock = live_socket(home)
    assert sock is not None

    async def open_engine() -> Any:
        return await open_local_core(home, embedding__provider="none")

    async with (
        Proxy(tmp_path / "proxy.sock", sock) as proxy,
        _following_owner(home, str(proxy.path), open_engine) as core,
    ):
        yield core, proxy


def _subagent(text: str) -> SubagentOutcome:
    return SubagentOutcome(
        agent="hermes", session_id="handover-s", task=text, result="done", namespace=NS
    )


@pytest.mark.parametrize("call", ["turn_end", "record_subagent_outcome"])
@pytest.mark.parametrize("how", ["clean", "sigkill"])
async def test_a_keyless_turn_end_resent_after_its_owner_left_is_stored_once(
    tmp_path: Path, how: str, call: str
) -> None:
    """A sub-agent's outcome is a turn of its parent session: it is keyed and resent the same way."""

    def send(core: Any, text: str) -> Any:
        if call == "turn_end":
            return core.turn_end(_turn(text))
        return core.record_subagent_outcome(_subagent(text))

    home = tmp_path / "home"
    owner = await Proc.start(tmp_path, "owner", OWNER, str(home))
    try:
        assert await owner.line() == "LocalCore"
        async with _through_proxy(tmp_path, home) as (core, proxy):
            # the same content sent twice without a key is still two turns
            twice = [await core.turn_end(_turn("fact: the wren count is 2")) for _ in range(2)]
            assert twice[0].trace_id != twice[1].trace_id
            proxy.lose_answers = True
            text = "fact: the heron count is 7"
            sent = asyncio.create_task(send(core, text))
            end = time.monotonic() + STEP_S
            while not await asyncio.to_thread(_journaled, home, text):
                assert time.monotonic() < end and not sent.done(), "the owner never journaled it"
                await asyncio.sleep(0.02)
            await owner_leaves(owner, how)  # its answer never reached the client
            ack = await asyncio.wait_for(sent, STEP_S)  # resent: this process took the home over
            assert (owner_record(home) or {}).get("pid") == os.getpid()
            listed = await asyncio.wait_for(core.list_traces(ListQuery(namespace=NS)), STEP_S)
    finally:
        owner.kill()
    herons = [t.id for t in listed if text in (t.user_text or "")]
    assert herons == [ack.trace_id]
    assert sorted(t.id for t in listed if "wren" in t.user_text) == sorted(
        a.trace_id for a in twice
    )


async def test_a_read_cut_off_by_its_owners_clean_exit_is_resent_to_the_next_owner(
    tmp_path: Path,
) -> None:
    """The owner's LLM relevance filter (the loopback OpenAI-compatible stub) holds a search in
    flight until the owner has stopped serving; its drain (2 s) cuts the call off, and the client
    resends it: this process takes the home over and answers it (the stub answers from then on).
    A regression guard: it passes on the old code too (see the module docstring)."""
    from stratamem.core import open_core
    from stratamem.core.retrieval.llm_filter import TASK

    in_filter, release = threading.Event(), threading.Event()

    def script(kind: str, body: Any) -> StubAnswer | None:
        msgs = body.get("messages") if isinstance(body, dict) else None
        if kind != "chat" or not msgs or not str(msgs[0].get("content", "")).startswith(TASK):
            return StubAnswer(content="{}")
        in_filter.set()
        release.wait(STEP_S)  # the owner's filter call waits for the test
        n = str(msgs[1].get("content", "")).count("[TRACE]")
        return StubAnswer(content=json.dumps({"selected": list(range(1, n + 1))}))

    home = tmp_path / "home"
    with StubOpenAIServer() as server:
        server.handler = script
        settings = {
            "llm__provider": "openai_compatible",
            "llm__endpoint": server.url,
            "llm__model": "stub",
            "llm__max_retries": 0,
            "llm__fallback_to_host": False,
            "retrieval__llm_filter_timeout_ms": int(STEP_S * 1000),
        }
        owner = await Proc.start(tmp_path, "owner", OWNER, str(home), json.dumps(settings))
        try:
            assert await owner.line() == "LocalCore"
            sock = live_socket(home)
            assert sock is not None
            async with open_core(home, embedding__provider="none", **settings) as core:
                assert type(core).__name__ == "RemoteCore"
                for i in range(4):
                    await core.turn_end(_turn(f"fact {i}: the kestrel count is {i + 3}", f"k-{i}"))
                await core.flush(STEP_S)
                query = RetrievalQuery(
                    agent="hermes",
                    query="kestrel count",
                    namespace=NS,
                    deadline_at=_now() + int(3 * STEP_S * 1000),
                )
                searching = asyncio.create_task(core.search(query))
                assert await asyncio.to_thread(in_filter.wait, STEP_S), "no filter call came"
                assert owner.proc.stdin is not None
                owner.proc.stdin.close()  # a clean exit: 2 s of drain, then the search is cut off
                # its service removes serve.json once stopped: past the drain, the search cut off.
                # The search resent on the cut-off makes this process the next owner, whose
                # serve.json may replace the leaving one's between two looks: what counts is that
                # the file no longer names the leaving owner (not that it was seen absent)
                end = time.monotonic() + STEP_S
                while (read_serve_json(home) or {}).get("pid") == owner.proc.pid:
                    if time.monotonic() >= end:
                        raise AssertionError(f"the owner never stopped\n{await owner.stacks()}")
                    await asyncio.sleep(0.05)
                release.set()  # the leaving owner's filter thread may finish; the next one's too
                assert await owner.exit_code() == 0, owner.stderr()
                found = await asyncio.wait_for(searching, STEP_S)
                assert found.hits and not found.cut_off
                assert (owner_record(home) or {}).get("pid") == os.getpid()
        finally:
            release.set()
            owner.kill()
