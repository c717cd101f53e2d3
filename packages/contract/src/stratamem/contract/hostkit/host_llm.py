"""Lend a host's own LLM to the home's service: the host side of ``stratamem.v1.HostLlm``.

A ``HostLlmLender`` keeps one ``HostLlm.Connect`` stream open to the service from a daemon thread:
it says ``hello`` (with ``as_default`` when the host's user opted in to the core using this model
while its config names none), runs each completion the core asks for on a small pool with the
host's ``complete`` callable, and answers it by id. When the service goes away (idle exit, restart)
it connects again (``connect`` finds or starts the service), so a long-lived host keeps lending.
The host never hands over a key: its callable runs the model with the host's own auth.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import grpc

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.v1 import host_llm_pb2 as h
from stratamem.v1 import host_llm_pb2_grpc

log = logging.getLogger("stratamem.hostkit.host_llm")

#: ``complete(messages, *, json_mode, temperature, max_tokens, timeout_ms, model)`` →
#: ``{"text", "model"?, "usage"?: {prompt_tokens, completion_tokens, total_tokens}}`` (or a string)
Complete = Callable[..., Any]
#: returns the service's gRPC target (``unix:/…``), finding or starting it
Connect = Callable[[], str]

_STOP = object()
_RETRY_S = (0.2, 0.5, 1.0, 2.0, 5.0)


def _response(request: h.CompletionRequest, complete: Complete) -> h.CompletionResponse:
    started = time.perf_counter()
    kwargs: dict[str, Any] = {
        "json_mode": request.json_mode,
        "timeout_ms": request.timeout_ms if request.HasField("timeout_ms") else 60_000,
    }
    for name in ("temperature", "max_tokens", "model"):
        if request.HasField(name):
            kwargs[name] = getattr(request, name)
    messages = [{"role": m.role, "content": m.content} for m in request.messages]
    try:
        raw = complete(messages, **kwargs)
    except StratamemError as err:
        error = h.CompletionError(code=err.code.value, message=str(err)[:500])
        return h.CompletionResponse(id=request.id, error=error)
    except Exception as exc:  # the host's model failed: the core falls back
        error = h.CompletionError(code=ErrorCode.LLM_UNAVAILABLE.value, message=str(exc)[:500])
        return h.CompletionResponse(id=request.id, error=error)
    out = h.CompletionResponse(id=request.id, duration_ms=(time.perf_counter() - started) * 1000)
    if isinstance(raw, str):
        out.text = raw
        return out
    if not isinstance(raw, Mapping) or not isinstance(raw.get("text"), str):
        out.error.CopyFrom(
            h.CompletionError(
                code=ErrorCode.LLM_OUTPUT_MALFORMED.value,
                message=f"host LLM returned {type(raw).__name__}, not text",
            )
        )
        return out
    out.text = raw["text"]
    out.model = str(raw.get("model") or "")
    usage = raw.get("usage")
    if isinstance(usage, Mapping):
        out.usage.CopyFrom(
            h.CompletionUsage(
                **{
                    k: int(usage.get(k) or 0)
                    for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                }
            )
        )
    return out


class HostLlmLender:
    """One lending stream per host process (``start`` once, ``close`` at shutdown)."""

    def __init__(
        self,
        connect: Connect,
        complete: Complete,
        *,
        host: str,
        model: str = "",
        as_default: bool = False,
        max_concurrency: int = 2,
        metadata: Sequence[tuple[str, str]] = (),
    ) -> None:
        self._connect = connect
        self._complete = complete
        self._hello = h.HostLlmHello(
            host=host, model=model, max_concurrency=max_concurrency, as_default=as_default
        )
        self._metadata = tuple(metadata)
        self._pool = cf.ThreadPoolExecutor(max(1, max_concurrency), thread_name_prefix="llm-lend")
        self._closed = threading.Event()
        self._streaming = threading.Event()
        self._lock = threading.Lock()
        self._call: Any = None
        self._outbox: queue.Queue[Any] | None = None
        self._thread: threading.Thread | None = None
        #: completions answered (for a host's own diagnostics)
        self.served = 0

    @property
    def streaming(self) -> bool:
        """Whether a stream to the service is open (``hello`` sent)."""
        return self._streaming.is_set()

    def start(self) -> HostLlmLender:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="stratamem-llm-lend", daemon=True
            )
            self._thread.start()
        return self

    def wait_streaming(self, timeout: float) -> bool:
        return self._streaming.wait(timeout)

    def close(self, timeout: float = 2.0) -> None:
        """End the stream (the core's pending requests fail over to its fallback) and stop."""
        self._closed.set()
        with self._lock:
            call, outbox = self._call, self._outbox
        if outbox is not None:
            outbox.put(_STOP)
        if call is not None:
            call.cancel()
        if self._thread is not None:
            self._thread.join(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ the stream
    def _run(self) -> None:
        attempt = 0
        while not self._closed.is_set():
            try:
                target = self._connect()
                self._stream(target)
                attempt = 0
            except Exception as exc:
                if self._closed.is_set():
                    break
                log.info("stratamem: host LLM stream: %s", exc)
            finally:
                self._streaming.clear()
            self._closed.wait(_RETRY_S[min(attempt, len(_RETRY_S) - 1)])
            attempt += 1

    def _stream(self, target: str) -> None:
        outbox: queue.Queue[Any] = queue.Queue()
        outbox.put(h.HostLlmUpstream(hello=self._hello))

        def upstream() -> Iterator[h.HostLlmUpstream]:
            while True:
                item = outbox.get()
                if item is _STOP:
                    return
                yield item

        with grpc.insecure_channel(target) as channel:
            stub = host_llm_pb2_grpc.HostLlmStub(channel)
            call = stub.Connect(upstream(), metadata=self._metadata or None)
            with self._lock:
                if self._closed.is_set():
                    call.cancel()
                    return
                self._call, self._outbox = call, outbox
            try:
                self._streaming.set()
                for down in call:
                    if down.WhichOneof("kind") == "request":
                        self._pool.submit(self._serve, down.request, outbox)
            except grpc.RpcError as exc:
                if not self._closed.is_set() and exc.code() != grpc.StatusCode.CANCELLED:
                    raise
            finally:
                outbox.put(_STOP)
                with self._lock:
                    self._call, self._outbox = None, None

    def _serve(self, request: h.CompletionRequest, outbox: queue.Queue[Any]) -> None:
        outbox.put(h.HostLlmUpstream(response=_response(request, self._complete)))
        self.served += 1
