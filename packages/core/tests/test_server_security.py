"""Trust model: socket clients are the owner; TCP needs a bearer token (constant-time compared) whose
namespaces are enforced server-side on every RPC and stream."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from server_support import tcp_service, write_tokens

from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, TurnInput, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.contract.remote import RemoteCore
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import ServeOptions, Service
from stratamem.core.server.auth import Authenticator, Principal, authorize_namespace

HERMES = Namespace(agent_kind="hermes")
OPENCLAW = Namespace(agent_kind="openclaw")


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Service]:
    write_tokens(tmp_path / "home", {"scoped-token": ["hermes/*"]})
    async with tcp_service(tmp_path / "home") as svc:
        yield svc


def _turn(ns: Namespace, text: str) -> TurnResult:
    return TurnResult(
        agent=ns.agent_kind,
        session_id=f"s-{ns.agent_kind}",
        agent_text="ok",
        user_text=text,
        ts=int(time.time() * 1000),
        namespace=ns,
    )


async def test_tcp_calls_without_or_with_a_wrong_token_are_unauthenticated(
    service: Service,
) -> None:
    assert service.tcp_address is not None
    for token in (None, "wrong-token", "admin-token-but-longer"):
        async with RemoteCore(service.tcp_address, token=token, reconnect_s=0) as remote:
            with pytest.raises(StratamemError) as err:
                await remote.health()
            assert err.value.code == "unauthenticated"
    # the standard health service is guarded too
    async with grpc.aio.insecure_channel(service.tcp_address) as ch:
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        with pytest.raises(grpc.aio.AioRpcError) as rpc_err:
            await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest())
        assert rpc_err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        ok = await health_pb2_grpc.HealthStub(ch).Check(
            health_pb2.HealthCheckRequest(), metadata=(("authorization", "Bearer admin-token"),)
        )
        assert ok.status == health_pb2.HealthCheckResponse.SERVING


async def test_a_scoped_token_acts_only_in_its_namespaces(service: Service) -> None:
    assert service.tcp_address is not None
    async with RemoteCore(service.tcp_address, token="scoped-token") as remote:
        ack = await remote.turn_end(_turn(HERMES, "scoped write"))
        assert ack.trace_id
        with pytest.raises(StratamemError) as err:
            await remote.turn_end(_turn(OPENCLAW, "forbidden write"))
        assert err.value.code == "permission_denied"
        with pytest.raises(StratamemError) as err:
            await remote.search(RetrievalQuery(agent="openclaw", query="x", namespace=OPENCLAW))
        assert err.value.code == "permission_denied"
        with pytest.raises(StratamemError) as err:
            await remote.list_traces(ListQuery(include_all_namespaces=True))
        assert err.value.code == "permission_denied"
        # an omitted namespace is not a way around the scope: it falls back to the agent's own
        with pytest.raises(StratamemError) as err:
            await remote.get_trace(ack.trace_id)
        assert err.value.code == "permission_denied"
        assert (await remote.get_trace(ack.trace_id, HERMES)) is not None
        # the journal's admin actions are the owner's
        with pytest.raises(StratamemError) as err:
            await remote.journal_admin("list")
        assert err.value.code == "permission_denied"
    # nothing of the forbidden write reached the store
    async with RemoteCore(f"unix:{service.socket_path}") as owner:
        assert await owner.list_traces(ListQuery(namespace=OPENCLAW)) == []
        assert await owner.journal_admin("list") == {"set_aside": []}
        with pytest.raises(StratamemError) as err:
            await owner.journal_admin("drop-everything")
        assert err.value.code == "invalid_argument"


async def test_a_scoped_token_streams_its_own_namespaces_events_only(service: Service) -> None:
    async with RemoteCore(f"unix:{service.socket_path}") as owner:
        other = await owner.turn_end(_turn(OPENCLAW, "openclaw's private turn"))
        mine = await owner.turn_end(_turn(HERMES, "hermes's turn"))
        await owner.flush(30)
    assert service.tcp_address is not None
    async with RemoteCore(service.tcp_address, token="scoped-token") as remote:
        seen = []

        async def until_mine() -> None:
            async for e in remote.subscribe_events(since_seq=0):
                seen.append(e)
                if e.type == "trace.created" and e.payload.get("trace_id") == mine.trace_id:
                    return

        await asyncio.wait_for(until_mine(), 60)
    assert seen and all(str(e.payload.get("namespace", "")).startswith("hermes/") for e in seen)
    assert other.trace_id not in {e.payload.get("trace_id") for e in seen}
    # the owner's stream has both, the other namespace's first (so it was filtered, not late)
    bus = service.core.bus  # type: ignore[attr-defined]
    created = [e.payload["trace_id"] for e in bus.recent(0) if e.type == "trace.created"]
    assert created.index(other.trace_id) < created.index(mine.trace_id)


async def test_a_scoped_token_cannot_act_inside_another_namespaces_session(
    service: Service,
) -> None:
    async with RemoteCore(f"unix:{service.socket_path}") as owner:
        ack = await owner.turn_end(_turn(OPENCLAW, "openclaw's own session"))
    assert service.tcp_address is not None
    async with RemoteCore(service.tcp_address, token="scoped-token") as remote:
        hijack = TurnInput(
            agent="hermes", session_id="s-openclaw", user_text="hijack", ts=1, namespace=HERMES
        )
        for call in (remote.turn_start, remote.prepare_turn):
            with pytest.raises(StratamemError) as err:
                await call(hijack)
            assert err.value.code == "permission_denied"
        with pytest.raises(StratamemError) as err:
            await remote.turn_end(replace(_turn(HERMES, "hijack"), session_id="s-openclaw"))
        assert err.value.code == "permission_denied"
    async with RemoteCore(f"unix:{service.socket_path}") as owner:
        eps = await owner.list_episodes(ListQuery(include_all_namespaces=True, limit=50))
        assert [e.id for e in eps] == [ack.episode_id]  # no episode was created in it


async def test_socket_clients_are_the_owner_and_may_use_any_namespace(service: Service) -> None:
    async with RemoteCore(f"unix:{service.socket_path}") as owner:
        await owner.turn_end(_turn(OPENCLAW, "owner write"))
        await owner.turn_end(_turn(HERMES, "owner write 2"))
        assert len(await owner.list_traces(ListQuery(include_all_namespaces=True))) == 2
    async with RemoteCore(service.tcp_address or "", token="admin-token") as admin:
        assert len(await admin.list_traces(ListQuery(namespace=OPENCLAW))) == 1


def test_token_matching_and_namespace_patterns() -> None:
    auth = Authenticator({"t1": ("hermes/default",), "t2": ("*",)})
    assert auth.authenticate([("authorization", "Bearer t1")]).namespaces == ("hermes/default",)
    assert auth.authenticate([("authorization", "bearer t2")]).unrestricted
    for md in ([], [("authorization", "Bearer ")], [("authorization", "t1")], [("x", "Bearer t1")]):
        with pytest.raises(StratamemError) as err:
            auth.authenticate(md)
        assert err.value.code == "unauthenticated"
    scoped = Principal("token", ("hermes/default",))
    assert authorize_namespace(scoped, None) == Namespace(agent_kind="hermes")
    with pytest.raises(StratamemError):
        authorize_namespace(scoped, Namespace(agent_kind="hermes", profile_id="other"))
    wide = Principal("token", ("hermes/*", "dsh/*"))
    with pytest.raises(StratamemError):
        authorize_namespace(wide, None)  # ambiguous: must name one


async def test_a_tls_listener_serves_token_holders_over_tls(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = _self_signed(tmp_path)
    home = tmp_path / "tls-home"
    core = await open_local_core(home, embedding__provider="none")
    opts = ServeOptions(
        listen=["localhost:0"], token="tls-token", tls_cert=str(cert), tls_key=str(key)
    )
    svc = await Service(core, opts).start()
    try:
        target = f"localhost:{(svc.tcp_address or '').rsplit(':', 1)[1]}"
        async with RemoteCore(target, token="tls-token", root_certificates=cert.read_bytes()) as r:
            assert (await r.health()).ok
        async with RemoteCore(target, token="tls-token", reconnect_s=0) as plain:
            with pytest.raises(StratamemError):
                await plain.health()  # plaintext client against a TLS port
    finally:
        await svc.stop(1.0)
        await core.shutdown()


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-keyout",
            str(key_path),
            "-out",
            str(cert_path),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert_path, key_path


async def test_a_scoped_tokens_health_counts_its_namespaces_and_names_no_home(
    service: Service,
) -> None:
    # the viewer's /api/system already answered a scoped token so ("no home paths, pid or
    # backlog"); gRPC Health gave it the home's path and every namespace's row counts
    async with RemoteCore(f"unix:{service.socket_path}") as owner:
        for i in range(3):
            await owner.turn_end(replace(_turn(OPENCLAW, f"openclaw turn {i}"), turn_key=f"o{i}"))
        await owner.turn_end(_turn(HERMES, "hermes turn"))
        await owner.flush(30)
        full = await owner.health()
    assert full.home and full.counts["traces"] == 4
    assert service.tcp_address is not None
    async with RemoteCore(service.tcp_address, token="scoped-token") as remote:
        scoped = await remote.health()
    assert scoped.ok and scoped.version == full.version
    assert scoped.home == "" and scoped.journal_backlog == 0
    assert scoped.counts["traces"] == 1  # hermes/* sees its own trace, not openclaw's three
    assert scoped.counts.get("journal_set_aside", 0) == 0


async def test_the_owners_health_counts_every_kind_a_scoped_token_counts(service: Service) -> None:
    # the owner's counts had no episodes, which a token's (and the viewer's) have
    async with RemoteCore(f"unix:{service.socket_path}") as owner:
        for i in range(2):
            await owner.turn_end(replace(_turn(OPENCLAW, f"openclaw turn {i}"), turn_key=f"e{i}"))
        await owner.turn_end(_turn(HERMES, "hermes turn"))
        await owner.flush(30)
        full = await owner.health()
    assert service.tcp_address is not None
    async with RemoteCore(service.tcp_address, token="scoped-token") as remote:
        scoped = await remote.health()
    assert set(scoped.counts) <= set(full.counts)
    assert scoped.counts["episodes"] >= 1  # hermes/*'s own
    assert full.counts["episodes"] > scoped.counts["episodes"]  # and openclaw's
