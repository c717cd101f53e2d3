"""Idle exit of the resident service: it stops after ``server.idle_exit_s`` without calls or open streams.

Every RPC on every listener (core, workspace, host services, health) goes through a wrapper, put
around its handler when the handler is registered, that counts it in flight from its start until
its last response, and so does every viewer HTTP request
(an open ``/events`` stream for as long as it is open); the service is idle only when nothing is in
flight, and idle time counts from the end of the last call, or from when the service became ready.
``0`` disables the exit.
"""

from __future__ import annotations

import asyncio
import inspect
import time
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


class _CountedHandlers(grpc.GenericRpcHandler):  # type: ignore[misc]
    """A generic handler whose method handlers count their calls into an ``Activity``."""

    def __init__(self, inner: grpc.GenericRpcHandler, activity: Activity) -> None:
        self.inner = inner
        self.activity = activity
        #: id(handler) -> (handler, its counted copy): wrapped once per method, not per call
        self._wrapped: dict[int, tuple[Any, Any]] = {}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        handler = self.inner.service(handler_call_details)
        if handler is None or not hasattr(handler, "_replace"):
            return handler
        hit = self._wrapped.get(id(handler))
        if hit is not None and hit[0] is handler:
            return hit[1]
        wrapped = _counted(handler, self.activity)
        if len(self._wrapped) < 1024:  # a handler built per call is not kept
            self._wrapped[id(handler)] = (handler, wrapped)
        return wrapped


def _counted(handler: Any, activity: Activity) -> Any:
    fields = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")
    return handler._replace(**{f: _wrap(getattr(handler, f), activity) for f in fields})


def count_activity(server: grpc.aio.Server, activity: Activity) -> grpc.aio.Server:
    """Make every handler registered on ``server`` from now on (ours, health, reflection, host
    services) count its calls into ``activity``.

    The handlers are wrapped once, when registered, instead of by a server interceptor: with any
    interceptor grpc.aio resolves every call's handler through an awaited interceptor chain, a
    cost paid on each call (measured in ``bench/results/grpc-overhead-session4.md``).
    """
    add_generic = server.add_generic_rpc_handlers
    add_registered = server.add_registered_method_handlers

    def generic(handlers: Any) -> None:
        add_generic(tuple(_CountedHandlers(h, activity) for h in handlers))

    def registered(service_name: str, handlers: dict[str, Any]) -> None:
        add_registered(service_name, {k: _counted(h, activity) for k, h in handlers.items()})

    setattr(server, "add_generic_rpc_handlers", generic)  # noqa: B010 - instance-level override
    setattr(server, "add_registered_method_handlers", registered)  # noqa: B010
    return server


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
