"""``stratamem.v1.HostLlm``: a connected host lends its LLM to the core over a bidirectional stream.

``HostLlmBroker`` is the core-side provider: ``complete()`` sends a request to a connected host and
waits (with a timeout) for its answer; with no host connected it fails at once with ``llm_unavailable``
so the caller falls back cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.server.rpc import Wrapper
from stratamem.core.telemetry import get_logger
from stratamem.v1 import host_llm_pb2 as h
from stratamem.v1 import host_llm_pb2_grpc

_log = get_logger("host_llm")

#: Extra seconds the core waits beyond a request's own budget (see host_llm.proto).
GRACE_S = 5.0
DEFAULT_TIMEOUT_MS = 60_000


@dataclass
class _Host:
    host: str
    model: str
    as_default: bool = False
    outbox: asyncio.Queue[h.HostLlmDownstream | None] = field(
        default_factory=lambda: asyncio.Queue(256)
    )
    pending: dict[str, asyncio.Future[h.CompletionResponse]] = field(default_factory=dict)


class HostLlmBroker:
    """Routes completion requests to the most recently connected host (one loop: the server's)."""

    def __init__(self, on_default_lenders: Callable[[int], None] | None = None) -> None:
        self._hosts: list[_Host] = []
        self._ids = itertools.count(1)
        self.loop: asyncio.AbstractEventLoop | None = None
        #: told how many connected hosts offer their model as the core's default (``as_default``)
        self._on_default_lenders = on_default_lenders

    @property
    def default_lenders(self) -> int:
        return sum(1 for x in self._hosts if x.as_default)

    def _lenders_changed(self) -> None:
        if self._on_default_lenders is not None:
            try:
                self._on_default_lenders(self.default_lenders)
            except Exception:
                _log.exception("host_llm.default_lender_callback_failed")

    @property
    def connected(self) -> bool:
        return bool(self._hosts)

    def close_all(self) -> None:
        """End every host stream (server drain); pending requests fail with ``llm_unavailable``."""
        for host in list(self._hosts):
            with contextlib.suppress(asyncio.QueueFull):
                host.outbox.put_nowait(None)

    def describe(self) -> dict[str, Any]:
        return {"connected": len(self._hosts), "hosts": [x.host for x in self._hosts]}

    async def complete(
        self,
        messages: Sequence[dict[str, str]],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout_ms: int | None = None,
        json_mode: bool = False,
    ) -> dict[str, Any]:
        """``{"text", "model", "usage", "duration_ms"}`` or a typed ``llm_*`` error."""
        if not self._hosts:
            raise StratamemError(ErrorCode.LLM_UNAVAILABLE, "no host is connected to lend its LLM")
        host = self._hosts[-1]
        rid = f"c{next(self._ids)}"
        budget_ms = int(timeout_ms or DEFAULT_TIMEOUT_MS)
        req = h.CompletionRequest(
            id=rid,
            messages=[h.ChatMessage(role=x["role"], content=x["content"]) for x in messages],
            timeout_ms=budget_ms,
            json_mode=json_mode,
        )
        if model is not None:
            req.model = model
        if temperature is not None:
            req.temperature = temperature
        if max_tokens is not None:
            req.max_tokens = max_tokens
        fut: asyncio.Future[h.CompletionResponse] = asyncio.get_running_loop().create_future()
        host.pending[rid] = fut
        try:
            host.outbox.put_nowait(h.HostLlmDownstream(request=req))
            resp = await asyncio.wait_for(fut, budget_ms / 1000 + GRACE_S)
        except asyncio.QueueFull as exc:
            raise StratamemError(ErrorCode.LLM_RATE_LIMITED, "host LLM queue is full") from exc
        except TimeoutError as exc:
            with contextlib.suppress(asyncio.QueueFull):
                host.outbox.put_nowait(h.HostLlmDownstream(cancel=h.CompletionCancel(id=rid)))
            raise StratamemError(
                ErrorCode.LLM_TIMEOUT, f"host LLM did not answer within {budget_ms} ms"
            ) from exc
        finally:
            host.pending.pop(rid, None)
        if resp.HasField("error") and resp.error.code:
            try:
                code = ErrorCode(resp.error.code)
            except ValueError:
                code = ErrorCode.LLM_UNAVAILABLE
            raise StratamemError(code, resp.error.message or "host LLM failed", {"host": host.host})
        usage = resp.usage
        return {
            "text": resp.text,
            "model": resp.model or host.model,
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.total_tokens,
            },
            "duration_ms": resp.duration_ms if resp.HasField("duration_ms") else None,
        }

    def complete_blocking(self, messages: Sequence[dict[str, str]], **kw: Any) -> dict[str, Any]:
        """Thread-side entry (LLM stages run in worker threads): runs ``complete`` on the server loop."""
        if self.loop is None or not self._hosts:
            raise StratamemError(ErrorCode.LLM_UNAVAILABLE, "no host is connected to lend its LLM")
        timeout = (kw.get("timeout_ms") or DEFAULT_TIMEOUT_MS) / 1000 + 2 * GRACE_S
        return asyncio.run_coroutine_threadsafe(self.complete(messages, **kw), self.loop).result(
            timeout
        )

    async def serve(
        self, upstream: AsyncIterator[h.HostLlmUpstream], context: Any
    ) -> AsyncIterator[h.HostLlmDownstream]:
        first = await anext(upstream, None)
        if first is None or first.WhichOneof("kind") != "hello":
            raise StratamemError(ErrorCode.PROTOCOL_ERROR, "HostLlm stream must start with hello")
        self.loop = asyncio.get_running_loop()
        host = _Host(first.hello.host or "host", first.hello.model, first.hello.as_default)
        self._hosts.append(host)
        _log.info("host_llm.connected", host=host.host, model=host.model, default=host.as_default)
        if host.as_default:
            self._lenders_changed()

        async def read() -> None:
            async for up in upstream:
                if up.WhichOneof("kind") == "response":
                    fut = host.pending.get(up.response.id)
                    if fut is not None and not fut.done():
                        fut.set_result(up.response)
            await host.outbox.put(None)

        reader = asyncio.create_task(read())
        try:
            while True:
                item = await host.outbox.get()
                if item is None:
                    break
                yield item
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
            with contextlib.suppress(ValueError):
                self._hosts.remove(host)
            if host.as_default:
                self._lenders_changed()
            for fut in host.pending.values():
                if not fut.done():
                    fut.set_exception(
                        StratamemError(ErrorCode.LLM_UNAVAILABLE, "host disconnected")
                    )
            _log.info("host_llm.disconnected", host=host.host)


def register_provider(broker: HostLlmBroker) -> Callable[[], None]:
    """Make the broker the core's ``host`` LLM transport; returns the function that undoes it."""
    from stratamem.core.llm.host import set_host_transport

    return set_host_transport(broker, name="grpc")


def add_host_llm(server: grpc.aio.Server, broker: HostLlmBroker, wrapper: Wrapper) -> None:
    async def connect(request_iterator: Any, context: Any) -> AsyncIterator[h.HostLlmDownstream]:
        principal = wrapper.principal_of(context)
        if not principal.unrestricted:
            raise StratamemError(
                ErrorCode.PERMISSION_DENIED,
                "lending an LLM needs the owner or an all-namespace token",
            )
        async for item in broker.serve(request_iterator, context):
            yield item

    async def guarded(request_iterator: Any, context: Any) -> AsyncIterator[h.HostLlmDownstream]:
        from stratamem.core.server.errors import abort, as_stratamem_error

        started = time.perf_counter()
        try:
            async for item in connect(request_iterator, context):
                yield item
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception as exc:
            await abort(context, as_stratamem_error(exc))
        finally:
            _log.debug("rpc.stream", method="HostLlm/Connect", s=time.perf_counter() - started)

    class _Servicer:
        Connect = staticmethod(guarded)

    host_llm_pb2_grpc.add_HostLlmServicer_to_server(_Servicer(), server)
