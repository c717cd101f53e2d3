"""Idle exit of the resident service: it stops after ``server.idle_exit_s`` without calls or open streams.

Every RPC on every listener (core, workspace, host services, health) passes an interceptor that
counts it in flight from its start until its last response, and so does every viewer HTTP request
(an open ``/events`` stream for as long as it is open); the service is idle only when nothing is in
flight, and idle time counts from the end of the last call, or from when the service became ready.
``0`` disables the exit.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc


class Activity:
    """Calls in flight and when the last one ended (monotonic seconds)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.last = time.monotonic()

    def begin(self) -> None:
        self.in_flight += 1
        self.last = time.monotonic()

    def end(self) -> None:
        self.in_flight -= 1
        self.last = time.monotonic()

    def idle_for(self) -> float:
        return 0.0 if self.in_flight > 0 else time.monotonic() - self.last


def _wrap(fn: Any, activity: Activity) -> Any:
    if fn is None:
        return None
    if inspect.isasyncgenfunction(fn):

        async def stream(request: Any, context: Any) -> Any:
            activity.begin()
            try:
                async for item in fn(request, context):
                    yield item
            finally:
                activity.end()

        return stream
    if inspect.iscoroutinefunction(fn):

        async def unary(request: Any, context: Any) -> Any:
            activity.begin()
            try:
                return await fn(request, context)
            finally:
                activity.end()

        return unary

    def plain(request: Any, context: Any) -> Any:
        activity.begin()
        try:
            return fn(request, context)
        finally:
            activity.end()

    return plain


class ActivityInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Counts every call's lifetime into an ``Activity``."""

    def __init__(self, activity: Activity) -> None:
        self.activity = activity
        #: id(handler) -> (handler, its wrapped copy): wrapped once per method, not per call
        self._wrapped: dict[int, tuple[Any, Any]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or not hasattr(handler, "_replace"):
            return handler
        hit = self._wrapped.get(id(handler))
        if hit is not None and hit[0] is handler:
            return hit[1]
        fields = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")
        wrapped = handler._replace(**{f: _wrap(getattr(handler, f), self.activity) for f in fields})
        if len(self._wrapped) < 1024:  # a per-call handler (an auth rejection) is not kept
            self._wrapped[id(handler)] = (handler, wrapped)
        return wrapped


async def exit_when_idle(activity: Activity, idle_s: float, stop: asyncio.Event) -> None:
    """Set ``stop`` once the service has been idle for ``idle_s`` seconds (never when ``<= 0``)."""
    if idle_s <= 0:
        return
    activity.last = max(activity.last, time.monotonic())  # idle from ready, not from construction
    while not stop.is_set():
        left = idle_s - activity.idle_for()
        if left <= 0:
            stop.set()
            return
        await asyncio.sleep(min(max(left, 0.05), 5.0))
