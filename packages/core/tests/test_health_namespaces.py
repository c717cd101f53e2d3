"""``Health.namespaces`` names the namespaces holding memories (a scoped token: only its own), and
the CLI finds them there: ``stratamem search``/``health``/``timeline`` without ``--namespace``
listed every episode of the home (``ListEpisodes``, 500 a page) to find them, a cost that grew with
the home (bench/results/startup-session19.md). A service older than the field still works: the CLI
falls back to the listing when it counts episodes but names no namespace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from server_support import write_tokens

from stratamem.contract.dtos import Health, Namespace, TurnResult
from stratamem.contract.remote import RemoteCore
from stratamem.core.commands.common import namespaces_with_memories
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.local import LocalCore
from stratamem.core.server.app import ServeOptions, Service

ALICE = Namespace(agent_kind="hermes", profile_id="alice")
BOB = Namespace(agent_kind="hermes", profile_id="bob")
STRATAMEM = str(Path(sys.executable).with_name("stratamem"))


def _turn(ns: Namespace, text: str, session: str, ts: int) -> TurnResult:
    return TurnResult(
        agent=ns.agent_kind,
        session_id=session,
        agent_text="ok",
        user_text=text,
        ts=ts,
        namespace=ns,
    )


async def _remember(core: Any) -> None:
    """Alice's turn, then Bob's a minute later: Bob's namespace is the newer one."""
    t = int(time.time() * 1000) - 120_000
    await core.turn_end(
        _turn(ALICE, "Alice keeps the spare key under the blue flowerpot.", "sa", t)
    )
    await core.turn_end(_turn(BOB, "Bob's vault combination is 4-8-15-16.", "sb", t + 60_000))
    await core.flush(60)


@dataclass
class Served:
    core: LocalCore
    service: Service


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    """A home served on its socket and on loopback TCP, with a token for Alice's namespace and one
    for a namespace that holds nothing."""
    home = tmp_path / "home"
    write_tokens(home, {"alice-token": ["hermes/alice"], "carol-token": ["hermes/carol"]})
    core = await open_local_core(home)
    service = await Service(core, ServeOptions(listen=["127.0.0.1:0"], token="admin")).start()
    try:
        yield Served(core, service)
    finally:
        await service.stop(1.0)
        await core.shutdown()


async def test_health_names_every_namespace_holding_episodes_newest_first(served: Served) -> None:
    assert (await served.core.health()).namespaces == ()
    await _remember(served.core)
    local = await served.core.health()
    assert local.namespaces == (BOB, ALICE)
    assert local.counts["episodes"] == 2
    async with RemoteCore(f"unix:{served.service.socket_path}") as owner:
        assert (await owner.health()).namespaces == (BOB, ALICE)


async def test_a_scoped_token_sees_only_its_own_namespaces_in_health(served: Served) -> None:
    await _remember(served.core)
    scoped = await served.core.scoped_health(lambda ns: ns == ALICE)
    assert scoped.namespaces == (ALICE,)
    address = served.service.tcp_address
    assert address is not None
    async with RemoteCore(address, token="alice-token") as alice:
        health = await alice.health()
        assert health.namespaces == (ALICE,)
        assert health.counts["episodes"] == 1
    async with RemoteCore(address, token="carol-token") as carol:  # holds nothing: names nothing
        health = await carol.health()
        assert health.namespaces == () and health.counts["episodes"] == 0
        assert "bob" not in str(health) and "alice" not in str(health)


class _OlderCore:
    """The home's real core answering ``Health`` as a service older than ``Health.namespaces``
    does (the field unset); every other call goes to the core itself."""

    def __init__(self, core: LocalCore) -> None:
        self._core = core

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)

    async def health(self) -> Health:
        return replace(await self._core.health(), namespaces=())


def _rpc_methods(spans: InMemorySpanExporter) -> list[str]:
    return [s.name.rsplit("/", 1)[-1] for s in spans.get_finished_spans() if ".rpc." in s.name]


async def test_an_older_service_without_the_field_is_listed_episode_by_episode(
    tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    home = tmp_path / "home"
    core = await open_local_core(home, embedding__provider="none")
    service = await Service(_OlderCore(core), ServeOptions()).start()  # type: ignore[arg-type]
    try:
        async with RemoteCore(f"unix:{service.socket_path}") as client:
            assert await namespaces_with_memories(client) == []  # nothing counted: nothing listed
            assert "ListEpisodes" not in _rpc_methods(span_exporter)
            await _remember(core)
            span_exporter.clear()
            assert await namespaces_with_memories(client) == [BOB, ALICE]
            assert _rpc_methods(span_exporter) == ["Health", "ListEpisodes"]
    finally:
        await service.stop(1.0)
        await core.shutdown()


# -- the CLI, through the installed entry point and the home's resident service ----------------


def _cli(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAMEM_")}
    done = subprocess.run(
        [STRATAMEM, *argv, "--home", str(home)],
        env={**env, "STRATAMEM_EMBEDDING__PROVIDER": "none"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    return done


def _served_methods(home: Path, since: int) -> list[str]:
    """The RPCs the resident service logged (its ``rpc`` lines, debug level) after byte ``since``."""
    log = home / "logs" / "stratamem.log"
    with log.open("rb") as f:
        f.seek(since)
        lines = f.read().decode("utf-8").splitlines()
    out = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:  # a line some library wrote in its own format
            continue
        if isinstance(rec, dict) and rec.get("event") == "rpc":
            out.append(str(rec["method"]).rsplit("/", 1)[-1])
    return out


def test_search_health_and_timeline_without_a_namespace_list_no_episodes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("logging:\n  level: debug\n", encoding="utf-8")
    turns = [
        {
            "session": "s1",
            "user": "My sister Alice lives in Lisbon and works as a marine biologist.",
            "assistant": "Noted.",
            "ts": 1_700_000_000_000,
            "namespace": {"agent_kind": "hermes", "profile_id": "alice"},
        },
        {
            "session": "s2",
            "user": "My brother Bob lives in Porto and works as a marine engineer.",
            "assistant": "Noted.",
            "ts": 1_700_000_100_000,
            "namespace": {"agent_kind": "hermes", "profile_id": "bob"},
        },
    ]
    source = tmp_path / "turns.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    _cli(home, "ingest", str(source))
    log = home / "logs" / "stratamem.log"

    since = log.stat().st_size
    data = json.loads(_cli(home, "search", "marine", "--json").stdout)
    assert data["namespaces"] == ["hermes/bob", "hermes/alice"]
    assert {h["namespace"] for h in data["hits"]} == {"hermes/alice", "hermes/bob"}
    methods = _served_methods(home, since)
    assert "ListEpisodes" not in methods, methods
    assert "Health" in methods and "Search" in methods, methods  # the log sees the calls

    since = log.stat().st_size
    health = json.loads(_cli(home, "--json", "health").stdout)
    assert health["namespaces"] == ["hermes/bob", "hermes/alice"]
    methods = _served_methods(home, since)
    assert methods == ["Health"], methods  # one call: the command reuses its answer

    alice_trace = next(h["ref_id"] for h in data["hits"] if h["namespace"] == "hermes/alice")
    since = log.stat().st_size
    shown = _cli(home, "timeline", alice_trace)
    assert "Lisbon" in shown.stdout and "namespace hermes/alice" in shown.stderr
    methods = _served_methods(home, since)
    assert "ListEpisodes" not in methods and "Health" in methods, methods
