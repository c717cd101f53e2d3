"""The transport a ``RemoteCore`` rides on: one gRPC channel, a cap on calls in flight, and the
way back to a service that went away.

A call that finds the server unreachable is retried within a reconnect window. Given a
``reconnect`` callback (``stratamem.contract.hostkit.client.connect`` and ``open_core`` pass one),
a transport failure, before or during a call, asks it for the home's service (starting or taking
it over if none) and resends the call on a fresh channel: what was not acknowledged is sent again,
and turn keys make that exactly-once.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from stratamem.contract.errors import (
    ERROR_CODE_METADATA_KEY,
    ERROR_DETAILS_METADATA_KEY,
    ErrorCode,
    StratamemError,
    code_for_status,
)
from stratamem.v1 import memory_pb2_grpc, workspace_pb2_grpc

#: Default cap on concurrent RPCs per channel.
DEFAULT_MAX_IN_FLIGHT = 100
#: How long a call keeps retrying while the server is unreachable (restart, not yet listening).
DEFAULT_RECONNECT_S = 5.0
#: Extra time the transport deadline allows beyond a request's own ``deadline_at`` so the server can
#: answer with its safe cut-off instead of the call dying in transit.
DEADLINE_GRACE_S = 0.5
_MAX_BYTES = 16 * 1024 * 1024

CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", _MAX_BYTES),
    ("grpc.max_send_message_length", _MAX_BYTES),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.enable_retries", 0),
]


def error_from_rpc(exc: grpc.aio.AioRpcError) -> StratamemError:
    """The ``StratamemError`` a failed call stands for (same stable code as on the server)."""
    trailers = {k: v for k, v in (exc.trailing_metadata() or ()) if isinstance(v, str)}
    raw_code = trailers.get(ERROR_CODE_METADATA_KEY)
    details: dict[str, Any] = {}
    if ERROR_DETAILS_METADATA_KEY in trailers:
        try:
            loaded = json.loads(trailers[ERROR_DETAILS_METADATA_KEY])
            details = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            details = {}
    try:
        code = ErrorCode(raw_code) if raw_code else code_for_status(exc.code())
    except ValueError:
        code = code_for_status(exc.code())
    return StratamemError(code, exc.details() or exc.code().name, details)


class ReconnectingClient:
    """A gRPC channel (``unix:/path`` or ``host:port``) whose calls survive the service going away
    (the base of ``RemoteCore``). Use from one event loop."""

    def __init__(
        self,
        target: str,
        *,
        token: str | None = None,
        root_certificates: bytes | None = None,
        tls: bool = False,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        reconnect_s: float = DEFAULT_RECONNECT_S,
        reconnect: Callable[[], Awaitable[str]] | None = None,
    ) -> None:
        self.target = target
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ()
        )
        self._creds = (
            grpc.ssl_channel_credentials(root_certificates=root_certificates)
            if tls or root_certificates is not None
            else None
        )
        self._open_channel(target)
        self.max_in_flight = max_in_flight
        self._sem = asyncio.Semaphore(max_in_flight)
        self.reconnect_s = reconnect_s
        self._reconnect = reconnect
        self._recovery: asyncio.Task[None] | None = None
        self._generation = 0
        #: transport failures recovered by ``reconnect`` (a new channel each time)
        self.reconnects = 0
        self._closed = False

    def _open_channel(self, target: str) -> None:
        self.target = target
        if self._creds is not None:
            self._channel = grpc.aio.secure_channel(target, self._creds, options=CHANNEL_OPTIONS)
        else:
            self._channel = grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
        self._stub = memory_pb2_grpc.MemoryServiceStub(self._channel)
        self._workspace_stub = workspace_pb2_grpc.WorkspaceMemoryServiceStub(self._channel)

    @property
    def recovering(self) -> bool:
        """Whether a recovery (finding, starting or taking over the service) is under way."""
        return self._recovery is not None and not self._recovery.done()

    async def _recover(self, failed_generation: int, until: float | None = None) -> bool:
        """Find (or start) the service again and move to a fresh channel, once per failure.

        Every call that failed on one channel waits for the same recovery task; a call with a
        deadline stops waiting at ``until`` (``time.monotonic()``) and gets False, while the
        recovery goes on in the background for the calls after it. (A call used to run the
        recovery itself and wait for it whole: up to the 60 s start budget past its deadline.)"""
        assert self._reconnect is not None
        if self._closed or self._generation != failed_generation:
            return True  # another call already recovered
        task = self._recovery
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._replace_channel(failed_generation))
            task.add_done_callback(_retrieve)  # its waiters may all have given up by their deadline
            self._recovery = task
        if until is None:
            await asyncio.shield(task)
            return True
        left = until - time.monotonic()
        if left <= 0:
            return False
        try:
            await asyncio.wait_for(asyncio.shield(task), left)
        except TimeoutError:
            return False
        return True

    async def _replace_channel(self, failed_generation: int) -> None:
        assert self._reconnect is not None
        if self._closed or self._generation != failed_generation:
            return
        target = await self._reconnect()
        if self._closed:
            return  # shut down meanwhile: no channel to open
        old = self._channel
        self._open_channel(target)
        self._generation += 1
        self.reconnects += 1
        asyncio.get_running_loop().create_task(old.close(grace=1.0))

    @property
    def channel(self) -> grpc.aio.Channel:
        return self._channel

    # ------------------------------------------------------------------ plumbing
    async def _call(
        self,
        method: str,
        request: Any,
        deadline_s: float | None = None,
        stub: str = "_stub",
        *,
        cut_off: Callable[[], Any] | None = None,
    ) -> Any:
        """``method`` on the service, resent on a fresh channel when the service went away.

        ``deadline_s`` bounds the call; with ``cut_off`` (a call carrying the caller's deadline,
        ``DEADLINE_GRACE_S`` included in ``deadline_s``) a deadline that passes while no service
        answers returns ``cut_off()`` instead, the safe cut-off the core gives for a deadline
        that passed before it could start."""
        started = time.monotonic()
        give_up = started + self.reconnect_s
        hard = None if deadline_s is None else started + deadline_s
        soft = None if hard is None else hard - (DEADLINE_GRACE_S if cut_off is not None else 0.0)
        delay = 0.05
        recoveries = 0
        retried = False  # past the first send only the caller's own deadline is waited for

        def passed() -> Any:
            if cut_off is not None:
                return cut_off()
            raise StratamemError(
                ErrorCode.DEADLINE_EXCEEDED, f"{method}: deadline passed reconnecting"
            )

        async with self._sem:
            while True:
                if self._closed:  # also when it was shut down while this call waited to resend
                    raise StratamemError(
                        ErrorCode.ALREADY_SHUT_DOWN, "this RemoteCore has been shut down"
                    )
                generation = self._generation
                timeout = None
                if hard is not None:
                    timeout = hard - time.monotonic()
                    if timeout <= 0 or (retried and soft is not None and time.monotonic() >= soft):
                        return passed()
                try:
                    fn = getattr(getattr(self, stub), method)
                    return await fn(request, metadata=self._metadata, timeout=timeout)
                except grpc.aio.AioRpcError as exc:
                    unreachable = exc.code() == grpc.StatusCode.UNAVAILABLE and not (
                        exc.trailing_metadata() or ()
                    )
                    retried = True
                    if unreachable and self._reconnect is not None and recoveries < 20:
                        recoveries += 1
                        if recoveries > 1:
                            await _sleep_until(min(0.05 * recoveries, 0.5), soft)
                        if not await self._recover(generation, soft):
                            return passed()
                        continue
                    if unreachable and time.monotonic() + delay < give_up:
                        await _sleep_until(delay, soft)
                        delay = min(delay * 2, 0.5)
                        continue
                    raise error_from_rpc(exc) from None

    @staticmethod
    def _timeout_for(deadline_at: int | None) -> float | None:
        if deadline_at is None:
            return None
        return max(0.001, (deadline_at - time.time() * 1000) / 1000) + DEADLINE_GRACE_S


async def _sleep_until(delay: float, until: float | None) -> None:
    if until is not None:
        delay = min(delay, max(0.0, until - time.monotonic()))
    await asyncio.sleep(delay)


def _retrieve(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()
