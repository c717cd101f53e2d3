"""The ``host`` provider: the core borrows the LLM of a connected host.

In-process adapters register a callable; the gRPC server registers its ``HostLlm`` stream broker.
With nothing connected a call waits briefly, then raises ``llm_unavailable``.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.llm.base import Completion, Message, check_messages, usage_of
from stratamem.core.telemetry import get_logger, span

log = get_logger("llm")

#: How long a call waits for a host to (re)connect before it gives up.
DEFAULT_CONNECT_TIMEOUT_S = 2.0


class HostLlmRegistry:
    """Connected host transports, newest first. A transport is either an object with
    ``async complete(messages, *, json_mode, temperature, max_tokens, timeout_ms)`` (and optionally
    ``connected`` and ``loop``), or a plain callable taking the same arguments; either may return a
    string, a ``Completion`` or a mapping with ``text``/``model``/``usage``/``duration_ms``."""

    def __init__(self) -> None:
        self._transports: list[tuple[str, Any]] = []
        self._lock = threading.Lock()

    def register(self, transport: Any, *, name: str = "host") -> Callable[[], None]:
        """Add a transport; returns the function that removes it again."""
        entry = (name, transport)
        with self._lock:
            self._transports.append(entry)
        log.info("host_llm.registered", host=name)

        def unregister() -> None:
            with self._lock:
                if entry in self._transports:
                    self._transports.remove(entry)

        return unregister

    def clear(self) -> None:
        with self._lock:
            self._transports.clear()

    def _active(self) -> tuple[str, Any] | None:
        with self._lock:
            items = list(self._transports)
        for name, t in reversed(items):
            if bool(getattr(t, "connected", True)):
                return name, t
        return None

    @property
    def connected(self) -> bool:
        return self._active() is not None

    async def wait_connected(self, timeout_s: float) -> tuple[str, Any] | None:
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            found = self._active()
            if found is not None or time.monotonic() >= deadline:
                return found
            await asyncio.sleep(min(0.02, max(0.0, deadline - time.monotonic())))

    async def complete(
        self,
        messages: list[Message],
        *,
        json_mode: bool = False,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_s: float = 60.0,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    ) -> Completion:
        started = time.perf_counter()
        found = await self.wait_connected(min(connect_timeout_s, timeout_s))
        if found is None:
            raise StratamemError(
                ErrorCode.LLM_UNAVAILABLE,
                "no host is connected to lend its LLM",
                {"provider": "host", "waited_s": round(min(connect_timeout_s, timeout_s), 2)},
            )
        name, transport = found
        kwargs: dict[str, Any] = {
            "json_mode": json_mode,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "timeout_ms": int(timeout_s * 1000),
        }
        left = max(0.001, timeout_s - (time.perf_counter() - started))
        with span("llm.complete", provider="host", host=name, json_mode=json_mode) as sp:
            try:
                raw = await asyncio.wait_for(_invoke(transport, messages, kwargs), left)
            except TimeoutError as exc:
                raise StratamemError(
                    ErrorCode.LLM_TIMEOUT,
                    f"host LLM did not answer within {timeout_s:.1f}s",
                    {"provider": "host", "host": name},
                ) from exc
            except StratamemError:
                raise
            except Exception as exc:
                raise StratamemError(
                    ErrorCode.LLM_UNAVAILABLE,
                    f"host LLM failed: {exc}",
                    {"provider": "host", "host": name},
                ) from exc
            done = _as_completion(raw, name, (time.perf_counter() - started) * 1000)
            for k, v in done.usage.items():
                sp.set_attribute(f"llm.{k}", v)
            sp.set_attribute("llm.duration_ms", done.duration_ms)
        log.info(
            "llm.call",
            provider="host",
            host=name,
            model=done.model,
            duration_ms=done.duration_ms,
            **done.usage,
        )
        return done


async def _invoke(transport: Any, messages: list[Message], kwargs: dict[str, Any]) -> Any:
    fn = getattr(transport, "complete", transport)
    loop = getattr(transport, "loop", None)
    if inspect.iscoroutinefunction(fn):
        coro = fn(messages, **kwargs)
        current = asyncio.get_running_loop()
        if (
            isinstance(loop, asyncio.AbstractEventLoop)
            and loop is not current
            and loop.is_running()
        ):
            # the gRPC broker lives on the server's loop: run it there and wait from here
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))
        return await coro
    result = await asyncio.to_thread(fn, messages, **kwargs)
    if inspect.isawaitable(result):
        return await result
    return result


def _as_completion(raw: Any, host: str, elapsed_ms: float) -> Completion:
    if isinstance(raw, Completion):
        return raw
    if isinstance(raw, str):
        return Completion(raw, host, usage_of(None), round(elapsed_ms, 1), "host")
    if isinstance(raw, Mapping) and isinstance(raw.get("text"), str):
        duration = raw.get("duration_ms")
        return Completion(
            raw["text"],
            str(raw.get("model") or host),
            usage_of(raw.get("usage")),
            round(float(duration) if duration is not None else elapsed_ms, 1),
            "host",
        )
    raise StratamemError(
        ErrorCode.LLM_OUTPUT_MALFORMED,
        f"host LLM returned {type(raw).__name__}, not text",
        {"host": host},
    )


_registry = HostLlmRegistry()


def host_llm_registry() -> HostLlmRegistry:
    """The process-wide registry the gRPC server and in-process adapters register with."""
    return _registry


def set_host_transport(transport: Any, *, name: str = "grpc") -> Callable[[], None]:
    """Entry point for the gRPC ``HostLlm`` broker (and any other transport object)."""
    return _registry.register(transport, name=name)


def register_host_llm(fn: Callable[..., Any], *, name: str = "in_process") -> Callable[[], None]:
    """Entry point for in-process adapters: ``fn(messages, *, json_mode, temperature, max_tokens,
    timeout_ms)`` returning text (sync or async). Returns the unregister function."""
    return _registry.register(fn, name=name)


class HostLlmProvider:
    """The ``host`` provider: ``complete`` goes to whichever host is connected at call time."""

    name = "host"

    def __init__(
        self,
        registry: HostLlmRegistry | None = None,
        *,
        model: str = "host",
        timeout_s: float = 60.0,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    ) -> None:
        self.registry = registry or _registry
        self.model = model
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s

    @property
    def connected(self) -> bool:
        return self.registry.connected

    async def complete(
        self,
        messages: list[Message],
        *,
        json_mode: bool = False,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> Completion:
        return await self.registry.complete(
            check_messages(messages),
            json_mode=json_mode,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout_s=float(timeout_s) if timeout_s is not None else self.timeout_s,
            connect_timeout_s=self.connect_timeout_s,
        )


def create_host_llm(config: Mapping[str, Any]) -> HostLlmProvider:
    return HostLlmProvider(
        model=str(config.get("model") or "host"),
        timeout_s=float(config.get("timeout_ms") or 60000) / 1000.0,
        connect_timeout_s=float(config.get("host_connect_timeout_ms") or 2000) / 1000.0,
    )
