"""A token scoped to exactly one namespace acts in it when a request names none (over real gRPC on
loopback); a token with several is refused with a typed error naming them, and no caller ever gets
another namespace's data."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from server_support import tcp_service, write_tokens

from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.contract.remote import RemoteCore
from stratamem.core.server.app import Service

ALICE = Namespace(agent_kind="hermes", profile_id="alice")
BOB = Namespace(agent_kind="hermes", profile_id="bob")
DEFAULT = Namespace(agent_kind="hermes")


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Service]:
    tokens = {
        "alice-token": ["hermes/alice"],
        "bob-token": ["hermes/bob"],
        "both-token": ["hermes/alice", "hermes/bob"],
    }
    write_tokens(tmp_path / "home", tokens)
    async with tcp_service(tmp_path / "home") as svc:
        yield svc


def _turn(text: str, session: str) -> TurnResult:
    """A turn that names no namespace (the agent alone, as a simple gRPC client sends it)."""
    return TurnResult(
        agent="hermes",
        session_id=session,
        agent_text="ok",
        user_text=text,
        ts=int(time.time() * 1000),
    )


async def test_a_single_namespace_token_acts_in_it_without_naming_it(service: Service) -> None:
    assert service.tcp_address is not None
    async with RemoteCore(service.tcp_address, token="bob-token") as bob:
        await bob.turn_end(_turn("Bob's vault combination is 4-8-15-16.", "s-bob"))
        await bob.flush(timeout_s=60)
    async with RemoteCore(service.tcp_address, token="alice-token") as alice:
        ack = await alice.turn_end(
            _turn("Alice keeps the spare key under the blue flowerpot.", "s-a")
        )
        assert ack.trace_id
        await alice.flush(timeout_s=60)
        got = await alice.get_trace(ack.trace_id)
        assert got is not None and "flowerpot" in got.user_text
        listed = await alice.list_traces(ListQuery())
        assert [t.id for t in listed] == [ack.trace_id]  # alice's only, never bob's
        found = await alice.search(RetrievalQuery(agent="hermes", query="spare key flowerpot"))
        texts = " ".join(h.snippet for h in found.hits)
        assert "vault" not in texts
        sid = await alice.open_session("hermes")
        assert sid
    async with RemoteCore(f"unix:{service.socket_path}") as owner:
        mine = await owner.list_traces(ListQuery(namespace=ALICE))
        assert [t.id for t in mine] == [ack.trace_id]
        assert await owner.list_traces(ListQuery(namespace=DEFAULT)) == []


async def test_a_several_namespace_token_must_name_one(service: Service) -> None:
    assert service.tcp_address is not None
    async with RemoteCore(service.tcp_address, token="both-token") as both:
        calls = (
            lambda: both.turn_end(_turn("unscoped write", "s-both")),
            lambda: both.list_traces(ListQuery()),
            lambda: both.search(RetrievalQuery(agent="hermes", query="anything")),
        )
        for call in calls:
            with pytest.raises(StratamemError) as err:
                await call()
            assert err.value.code == "permission_denied"
            assert "hermes/alice" in err.value.message and "hermes/bob" in err.value.message
            assert err.value.details["allowed"] == ["hermes/alice", "hermes/bob"]
        ack = await both.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s-both",
                agent_text="ok",
                user_text="named write",
                ts=int(time.time() * 1000),
                namespace=BOB,
            )
        )
        assert ack.trace_id
    async with RemoteCore(f"unix:{service.socket_path}") as owner:
        everything = await owner.list_traces(ListQuery(include_all_namespaces=True))
        assert [t.user_text for t in everything] == ["named write"]  # the refused one wrote nothing
