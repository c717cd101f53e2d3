"""Isolation with everything on: the real local embedder, full-mode learning with the scripted LLM
over loopback HTTP, two profiles of one agent kind (hermes/pa, hermes/pb) and one of another
(openclaw/default). Each namespace runs the same deploy story (so learning would gladly merge them)
with its own distinctive facts; every read path and every learned layer is checked for leaks, in
process and over gRPC with tokens scoped to one namespace each."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from learning_stub import answer, payload_of
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.contract.dtos import (
    FeedbackInput,
    ListQuery,
    Namespace,
    RetrievalQuery,
    ToolCall,
    ToolOutcome,
    TracePatch,
    TurnInput,
    TurnResult,
)
from stratamem.contract.errors import StratamemError
from stratamem.contract.remote import RemoteCore
from stratamem.core.config import defaults
from stratamem.core.embedding import load_embedder
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.learning.prompts import task_of
from stratamem.core.server.app import ServeOptions, Service

pytestmark = pytest.mark.asyncio(loop_scope="module")

PA = Namespace(agent_kind="hermes", profile_id="pa")
PB = Namespace(agent_kind="hermes", profile_id="pb")
OC = Namespace(agent_kind="openclaw", profile_id="default")
#: each namespace's distinctive fact (a host name no other namespace ever says)
FACT = {PA: "amber-17", PB: "violet-42", OC: "cobalt-93"}
TOKENS = {PA: "tok-pa", PB: "tok-pb", OC: "tok-oc"}


def key(ns: Namespace) -> str:
    return f"{ns.agent_kind}/{ns.profile_id}"


def now() -> int:
    return int(time.time() * 1000)


@dataclass
class World:
    core: Any
    service: Service
    prompts: list[tuple[str | None, str]]
    traces: dict[Namespace, set[str]] = field(default_factory=dict)
    episodes: dict[Namespace, set[str]] = field(default_factory=dict)
    sessions: dict[Namespace, str] = field(default_factory=dict)


async def _episode(w: World, ns: Namespace, i: int, ok: bool) -> None:
    fact = FACT[ns]
    sid = f"{ns.agent_kind}-{ns.profile_id}-{'ok' if ok else 'bad'}-{i}"
    t = now()
    await w.core.turn_start(
        TurnInput(
            agent=ns.agent_kind,
            session_id=sid,
            user_text=f"Deploy the web service to the staging host {fact}",
            ts=t,
            namespace=ns,
        )
    )
    if ok:
        text = f"Built the image and started it on {fact} with docker compose; /health is OK."
        calls = (
            ToolCall(name="docker.build", input={"tag": "web:latest"}, output="built"),
            ToolCall(name="docker.compose_up", input={"host": fact}, output="web started"),
        )
    else:
        text = f"I ran docker run --privileged on {fact} but it failed with permission denied."
        calls = (
            ToolCall(
                name="docker.run",
                input={"cmd": f"docker run --privileged {fact}"},
                output="Error: permission denied (exit code 1)",
                error_code="EXIT_1",
            ),
        )
    ack = await w.core.turn_end(
        TurnResult(
            agent=ns.agent_kind,
            session_id=sid,
            agent_text=text,
            ts=t + 5,
            tool_calls=calls,
            namespace=ns,
        )
    )
    if not ok:
        for _ in range(3):  # a failure burst: decision repair runs for this session
            await w.core.record_tool_outcome(
                ToolOutcome(
                    session_id=sid, tool="docker.run", success=False, episode_id=ack.episode_id
                )
            )
    await w.core.submit_feedback(
        FeedbackInput(
            episode_id=ack.episode_id,
            polarity="positive" if ok else "negative",
            magnitude=1.0,
            rationale="great, it works" if ok else "that failed again",
            namespace=ns,
        )
    )
    await w.core.close_session(sid)
    w.traces.setdefault(ns, set()).add(ack.trace_id)
    w.episodes.setdefault(ns, set()).add(ack.episode_id)
    w.sessions[ns] = sid


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    prompts: list[tuple[str | None, str]] = []

    def handler(kind: str, body: Any) -> StubAnswer | None:
        if kind != "chat" or not isinstance(body, dict):
            return None
        task = task_of(body.get("messages"))
        payload = payload_of(body)
        prompts.append((task, json.dumps(body.get("messages"))))
        return StubAnswer(content=json.dumps(answer(task, payload)))

    home = tmp_path_factory.mktemp("iso")
    tokens = {TOKENS[ns]: [key(ns)] for ns in FACT}
    (home / "config.yaml").write_text(json.dumps({"server": {"tokens": tokens}}), encoding="utf-8")
    with StubOpenAIServer() as server:
        server.handler = handler
        core = await open_local_core(
            home,
            embedder=load_embedder(defaults()["embedding"]),
            llm__provider="openai_compatible",
            llm__endpoint=server.url,
            llm__model="stub",
        )
        svc = await Service(core, ServeOptions(listen=["127.0.0.1:0"])).start()
        w = World(core, svc, prompts)
        try:
            assert (await core.health()).mode == "full"
            # interleaved, so every learning pass sees the other namespaces' rows in the stores
            for i in range(3):
                for ns in FACT:
                    await _episode(w, ns, i, ok=True)
            for i in range(2):
                for ns in FACT:
                    await _episode(w, ns, i, ok=False)
            await core.flush()
            assert not core.learner.failures, core.learner.failures
            yield w
        finally:
            await svc.stop(1.0)
            await core.shutdown()


def _leaks(text: str, ns: Namespace) -> list[str]:
    return [f for other, f in FACT.items() if other != ns and f in text]


# -- learning never mixes owners ----------------------------------------------------------------
async def test_no_llm_prompt_mixes_two_namespaces(world: World) -> None:
    assert world.prompts, "the scripted LLM was never asked"
    tasks = {t for t, _ in world.prompts}
    assert {"l2.induce", "skill.crystallize"} <= tasks, tasks
    for task, text in world.prompts:
        present = [f for f in FACT.values() if f in text]
        assert len(present) <= 1, (task, present)


async def test_every_learned_layer_holds_its_owners_rows_only(world: World) -> None:
    core = world.core
    for ns in FACT:
        q = ListQuery(namespace=ns, limit=200)
        own = {t.id for t in await core.list_traces(ListQuery(namespace=ns, limit=500))}
        policies = await core.list_policies(q)
        assert policies, f"no policy learned for {key(ns)}"
        for p in policies:
            assert (p.owner.owner_agent_kind, p.owner.owner_profile_id) == (
                ns.agent_kind,
                ns.profile_id,
            )
            assert set(p.source_trace_ids) <= own, key(ns)
            assert set(p.source_episode_ids) <= world.episodes[ns], key(ns)
            assert not _leaks(json.dumps([p.title, p.trigger, p.procedure, p.boundary]), ns)
        for wm in await core.list_world_models(q):
            assert wm.owner.owner_profile_id == ns.profile_id
            assert set(wm.policy_ids) <= {p.id for p in policies}
        skills = await core.list_skills(q)
        assert skills, f"no skill learned for {key(ns)}"
        for s in skills:
            assert s.owner.owner_profile_id == ns.profile_id
            assert set(s.evidence_anchors) <= own, key(ns)
            text = json.dumps([s.invocation_guide, s.guidance.preference, s.guidance.anti_pattern])
            assert not _leaks(text, ns), (key(ns), text)


# -- every read path -----------------------------------------------------------------------------
async def _reads(core: Any, world: World, ns: Namespace) -> None:
    mine, fact = world.traces[ns], FACT[ns]
    foreign = {t for o, ts in world.traces.items() if o != ns for t in ts}
    for reason in ("tool_driven", "turn_start"):
        res = await core.search(
            RetrievalQuery(
                agent=ns.agent_kind,
                query="which staging host did the deploy use?",
                namespace=ns,
                reason=reason,
            )
        )
        assert not _leaks(res.injected_context, ns)
        assert not {h.ref_id for h in res.hits} & foreign
    start = await core.turn_start(
        TurnInput(
            agent=ns.agent_kind,
            session_id=f"probe-{ns.agent_kind}-{ns.profile_id}",
            user_text="Deploy the web service to the staging host again",
            ts=now(),
            namespace=ns,
        )
    )
    assert fact in start.injected_context  # recall works ...
    assert not _leaks(start.injected_context, ns)  # ... and shows nothing of the others
    listed = await core.list_traces(ListQuery(namespace=ns, limit=500))
    assert {t.id for t in listed} >= mine and not {t.id for t in listed} & foreign
    assert {e.id for e in await core.list_episodes(ListQuery(namespace=ns, limit=500))}.isdisjoint(
        {e for o, es in world.episodes.items() if o != ns for e in es}
    )
    for other, ids in world.traces.items():
        if other == ns:
            continue
        tid = sorted(ids)[0]
        assert await core.get_trace(tid, ns) is None
        eid = sorted(world.episodes[other])[0]
        assert await core.get_episode(eid, ns) is None
        with pytest.raises(StratamemError) as err:
            await core.timeline(eid, ns)
        assert err.value.code in ("episode_not_found", "permission_denied")
        owner = world.core  # the other namespace's ids, as its owner sees them
        for p in await owner.list_policies(ListQuery(namespace=other, limit=50)):
            assert await core.get_policy(p.id, ns) is None
        for s in await owner.list_skills(ListQuery(namespace=other, limit=50)):
            assert await core.get_skill(s.id, namespace=ns) is None
        for wm in await owner.list_world_models(ListQuery(namespace=other, limit=50)):
            assert await core.get_world_model(wm.id, ns) is None


async def test_every_read_path_in_process_shows_only_the_callers_namespace(world: World) -> None:
    for ns in FACT:
        await _reads(world.core, world, ns)


async def test_every_read_path_over_grpc_with_a_scoped_token(world: World) -> None:
    assert world.service.tcp_address is not None
    for ns in FACT:
        async with RemoteCore(world.service.tcp_address, token=TOKENS[ns]) as remote:
            await _reads(remote, world, ns)
            # the token cannot name another namespace
            other = next(o for o in FACT if o != ns)
            with pytest.raises(StratamemError) as err:
                await remote.list_traces(ListQuery(namespace=other))
            assert err.value.code == "permission_denied"


async def test_every_read_path_from_lancedb_shows_only_the_callers_namespace(
    world: World,
) -> None:
    """The same reads with the hot index off (``storage.hot_index: false``): retrieval builds its
    LanceDB queries on scoped tables, in process and over gRPC with scoped tokens."""
    store = world.core.store
    hot, store.hot = store.hot, None
    try:
        for ns in FACT:
            await _reads(world.core, world, ns)
        assert world.service.tcp_address is not None
        for ns in FACT:
            async with RemoteCore(world.service.tcp_address, token=TOKENS[ns]) as remote:
                await _reads(remote, world, ns)
    finally:
        store.hot = hot


# -- writes and session-addressed calls need ownership --------------------------------------------
async def test_a_shared_trace_is_readable_but_not_writable_by_its_readers(world: World) -> None:
    core = world.core
    tid = sorted(world.traces[PA])[0]
    await core.store.update("traces", tid, {"share_scope": "public"})  # PA shares it with hermes
    before = await core.get_trace(tid, PA)
    assert before is not None and await core.get_trace(tid, PB) is not None  # same kind reads it
    assert await core.get_trace(tid, OC) is None
    with pytest.raises(StratamemError) as err:
        await core.update_trace(tid, TracePatch(agent_text="overwritten by pb"), PB)
    assert err.value.code == "permission_denied"
    assert await core.delete_traces([tid], PB) == 0
    after = await core.get_trace(tid, PA)
    assert after is not None and after.agent_text == before.agent_text
    await core.store.update("traces", tid, {"share_scope": "private"})


async def test_a_session_is_its_owners_alone(world: World) -> None:
    core = world.core
    sid = world.sessions[PA]
    eps_before = await core.list_episodes(ListQuery(namespace=PA, session_id=sid, limit=100))
    for call in (core.turn_start, core.prepare_turn):
        with pytest.raises(StratamemError) as err:
            await call(
                TurnInput(
                    agent="hermes", session_id=sid, user_text="hijack", ts=now(), namespace=PB
                )
            )
        assert err.value.code == "permission_denied"
    with pytest.raises(StratamemError) as err:
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id=sid,
                agent_text="hijacked",
                user_text="hijack",
                ts=now(),
                namespace=PB,
            )
        )
    assert err.value.code == "permission_denied"
    # over gRPC, a token scoped to pb using pa's session id is refused the same way
    assert world.service.tcp_address is not None
    async with RemoteCore(world.service.tcp_address, token=TOKENS[PB]) as remote:
        with pytest.raises(StratamemError) as err:
            await remote.turn_start(
                TurnInput(
                    agent="hermes", session_id=sid, user_text="hijack", ts=now(), namespace=PB
                )
            )
        assert err.value.code == "permission_denied"
    eps_after = await core.list_episodes(ListQuery(namespace=PA, session_id=sid, limit=100))
    assert [e.id for e in eps_after] == [e.id for e in eps_before]
    assert not await core.list_episodes(ListQuery(namespace=PB, session_id=sid, limit=100))


# -- events ---------------------------------------------------------------------------------------
async def test_events_reach_each_namespace_alone(world: World) -> None:
    assert world.service.tcp_address is not None
    for ns in FACT:
        async with RemoteCore(world.service.tcp_address, token=TOKENS[ns]) as remote:
            got: list[Any] = []

            async def take(remote: RemoteCore = remote, got: list[Any] = got) -> None:
                async for e in remote.subscribe_events(since_seq=0):
                    got.append(e)
                    if len(got) >= 5:
                        return

            await asyncio.wait_for(take(), 60)
        assert {e.payload.get("namespace") for e in got} == {key(ns)}
    # in process, a subscriber that names a namespace gets that namespace's events only
    seen: list[Any] = []

    async def local() -> None:
        async for e in world.core.subscribe_events(0, (), namespace=PB):
            seen.append(e)
            if len(seen) >= 5:
                return

    await asyncio.wait_for(local(), 60)
    assert {e.payload.get("namespace") for e in seen} == {key(PB)}
