"""Fuzzing the edge: thousands of malformed and oversized requests for every request message of the
memory and workspace services each get a typed INVALID_ARGUMENT; the server keeps serving and the store is unchanged."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem.contract.dtos import ListQuery, Namespace, TurnResult
from stratamem.contract.errors import ERROR_CODE_METADATA_KEY
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service
from stratamem.core.server.limits import MAX_STRING_CHARS
from stratamem.v1 import memory_pb2, workspace_pb2

SERVICE = memory_pb2.DESCRIPTOR.services_by_name["MemoryService"]
WORKSPACE = workspace_pb2.DESCRIPTOR.services_by_name["WorkspaceMemoryService"]
METHODS = [
    (f"{svc.full_name}/{m.name}", m.input_type, m.server_streaming)
    for svc in (SERVICE, WORKSPACE)
    for m in svc.methods
]
TYPED = {"invalid_argument", "protocol_error"}


class Served:
    def __init__(self, home: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.core: Any = self.run(open_local_core(home, embedding__provider="none"))
        self.service: Service = self.run(Service(self.core).start())
        self.baseline: tuple[Any, ...] = ()
        self.channel = grpc.insecure_channel(
            f"unix:{self.service.socket_path}", options=[("grpc.max_send_message_length", 64 << 20)]
        )

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(120)

    def snapshot(self) -> tuple[Any, ...]:
        async def snap() -> tuple[Any, ...]:
            traces = await self.core.list_traces(ListQuery(include_all_namespaces=True, limit=500))
            episodes = await self.core.list_episodes(
                ListQuery(include_all_namespaces=True, limit=500)
            )
            sessions = self.core.db.query("SELECT id FROM sessions ORDER BY id")
            return (
                sorted(t.id for t in traces),
                sorted(e.id for e in episodes),
                [r["id"] for r in sessions],
                self.core.journal.max_seq(),
            )

        return self.run(snap())  # type: ignore[no-any-return]

    def close(self) -> None:
        self.channel.close()
        self.run(self.service.stop(1.0))
        self.run(self.core.shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = Served(tmp_path_factory.mktemp("fuzz") / "home")
    s.run(
        s.core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="seed",
                agent_text="a",
                user_text="q",
                ts=int(time.time() * 1000),
                namespace=Namespace(agent_kind="hermes"),
            )
        )
    )
    s.run(s.core.flush(30.0))
    s.baseline = s.snapshot()
    try:
        yield s
    finally:
        s.close()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return _varint((number << 3) | wire)


def _string_fields(desc: Descriptor) -> list[FieldDescriptor]:
    return [f for f in desc.fields if f.type == FieldDescriptor.TYPE_STRING]


@st.composite
def malformed(draw: st.DrawFn, desc: Descriptor) -> bytes:
    """Bytes that cannot be a valid ``desc``: truncated, bad UTF-8 or bad JSON in a declared field."""
    strings = _string_fields(desc)
    kinds = ["truncated"] + (["bad_utf8"] if strings else [])
    if any(f.name.endswith("_json") for f in strings):
        kinds.append("bad_json")
    kind = draw(st.sampled_from(kinds))
    if kind == "truncated":
        number = draw(st.integers(1, 40))
        body = draw(st.binary(max_size=30))
        declared = len(body) + draw(st.integers(1, 1000))
        return _tag(number, 2) + _varint(declared) + body
    if kind == "bad_utf8":
        fd = draw(st.sampled_from(strings))
        junk = draw(st.binary(min_size=0, max_size=20))
        payload = b"\xff" + junk + b"\xc3"  # 0xff never occurs in UTF-8
        return _tag(fd.number, 2) + _varint(len(payload)) + payload
    fd = draw(st.sampled_from([f for f in strings if f.name.endswith("_json")]))
    text = draw(st.sampled_from(["{", "[1,", "nul", "{'a':1}", "NaN", '"unterminated']))
    text += draw(st.text(max_size=10))
    encoded = text.encode()
    return _tag(fd.number, 2) + _varint(len(encoded)) + encoded


@st.composite
def oversized(draw: st.DrawFn, desc: Descriptor) -> bytes:
    """A well-formed message whose some string (top level or one level down) is over the limit."""
    cls = message_factory.GetMessageClass(desc)
    msg = cls()
    candidates: list[tuple[Any, FieldDescriptor]] = [
        (msg, f) for f in _string_fields(desc) if not f.is_repeated
    ]
    for f in desc.fields:
        if f.type == FieldDescriptor.TYPE_MESSAGE and not f.is_repeated:
            sub = getattr(msg, f.name)
            candidates += [(sub, g) for g in _string_fields(f.message_type) if not g.is_repeated]
    if not candidates:
        return b"\x0a" + _varint(MAX_STRING_CHARS + 10) + b"x"  # declared huge, truncated
    target, fd = draw(st.sampled_from(candidates))
    setattr(
        target,
        fd.name,
        draw(st.sampled_from("xé✓")) * (MAX_STRING_CHARS + draw(st.integers(1, 64))),
    )
    return msg.SerializeToString()  # type: ignore[no-any-return]


def _call(served: Served, method: str, streaming: bool, payload: bytes) -> grpc.RpcError | None:
    path = f"/{method}"
    try:
        if streaming:
            stream = served.channel.unary_stream(path)(payload, timeout=10)
            next(iter(stream))
        else:
            served.channel.unary_unary(path)(payload, timeout=10)
    except grpc.RpcError as err:
        return err
    return None


def _assert_typed(err: grpc.RpcError | None, method: str) -> None:
    assert err is not None, f"{method} accepted a malformed request"
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, err.code(), err.details())
    trailers = dict(err.trailing_metadata() or ())
    assert trailers.get(ERROR_CODE_METADATA_KEY) in TYPED, (method, trailers)


def _settings(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@_settings(1500)
@given(data=st.data())
def test_malformed_requests_to_every_rpc_get_typed_invalid_argument(
    served: Served, data: Any
) -> None:
    name, desc, streaming = data.draw(st.sampled_from(METHODS))
    payload = data.draw(malformed(desc))
    _assert_typed(_call(served, name, streaming, payload), name)


@_settings(120)
@given(data=st.data())
def test_oversized_strings_to_every_rpc_get_typed_invalid_argument(
    served: Served, data: Any
) -> None:
    name, desc, streaming = data.draw(st.sampled_from(METHODS))
    payload = data.draw(oversized(desc))
    _assert_typed(_call(served, name, streaming, payload), name)


def test_zz_after_the_fuzzing_the_server_serves_and_the_store_is_unchanged(served: Served) -> None:
    # compares with the state right after seeding, whatever ran in between
    before = served.baseline
    for name, desc, streaming in METHODS:
        strings = _string_fields(desc)
        bad = _tag(strings[0].number, 2) + b"\x03\xff\xfe\xfd" if strings else b"\x0a\x64x"
        _assert_typed(_call(served, name, streaming, bad), name)
    assert served.snapshot() == before
    assert len(before[0]) == 1 and len(before[2]) == 1  # only the seed turn exists
    health = served.channel.unary_unary(f"/{SERVICE.full_name}/Health")(
        memory_pb2.HealthRequest().SerializeToString(), timeout=10
    )
    assert health
