"""The one wrapper every handler goes through: caller identity, wire limits, deadline, span, log, errors.

A handler is ``async fn(request, call) -> response`` (or an async generator for server streams); it
never sees a raw exception path: ``StratamemError`` becomes a status with the stable code in trailers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from stratamem.contract.dtos import Namespace
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.server.auth import Principal, authorize_namespace
from stratamem.core.server.errors import abort, as_stratamem_error
from stratamem.core.server.limits import check_request
from stratamem.core.server.tracing import rpc_span
from stratamem.core.telemetry import get_logger

_log = get_logger("rpc")

PrincipalOf = Callable[[Any], Principal]


@dataclass
class Call:
    """What a handler knows about its call beyond the request."""

    method: str
    principal: Principal
    context: Any

    def deadline_at(self, given: int | None) -> int | None:
        """The earlier of the request's own absolute deadline and the gRPC deadline (epoch ms)."""
        remaining = self.context.time_remaining()
        if remaining is None:
            return given
        grpc_at = int(time.time() * 1000 + max(0.0, remaining) * 1000)
        return grpc_at if given is None else min(given, grpc_at)

    def namespace(self, ns: Namespace | None, implied: Namespace | None = None) -> Namespace | None:
        """See :func:`authorize_namespace` (``implied``: the namespace a turn's agent implies)."""
        return authorize_namespace(self.principal, ns, implied)

    def require_unrestricted(self, what: str) -> None:
        if not self.principal.unrestricted:
            raise StratamemError(
                ErrorCode.PERMISSION_DENIED, f"{what} needs the owner or an all-namespace token"
            )


def _code(err: StratamemError) -> str:
    return err.code.value


def parse(request_cls: type[Message], data: Any) -> Message:
    """Requests arrive as raw bytes so that malformed input gets a typed error, not a transport one."""
    if isinstance(data, Message):
        return data
    msg = request_cls()
    try:
        msg.ParseFromString(bytes(data))
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise StratamemError(
            ErrorCode.PROTOCOL_ERROR,
            f"malformed {request_cls.DESCRIPTOR.name}: {exc}"[:300],
            {"message": request_cls.DESCRIPTOR.name},
        ) from exc
    return msg


def raw_request_size_check(data: Any) -> None:
    from stratamem.core.server.limits import MAX_REQUEST_BYTES

    size = len(data) if isinstance(data, (bytes, bytearray)) else 0
    if size > MAX_REQUEST_BYTES:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT,
            f"request of {size} bytes exceeds the {MAX_REQUEST_BYTES}-byte limit",
            {"limit": "max_request_bytes", "size": size, "max": MAX_REQUEST_BYTES},
        )


class Wrapper:
    """Builds wrapped handlers bound to how this server identifies callers."""

    def __init__(self, principal_of: PrincipalOf) -> None:
        self.principal_of = principal_of

    def unary(
        self,
        method: str,
        fn: Callable[[Any, Call], Awaitable[Message]],
        request_cls: type[Message] | None = None,
    ) -> Callable[[Any, Any], Awaitable[Message]]:
        async def handler(request: Any, context: Any) -> Message:
            started = time.perf_counter()
            code = "ok"
            with rpc_span(method, context.invocation_metadata()) as span:
                try:
                    principal = self.principal_of(context)
                    if request_cls is not None:
                        raw_request_size_check(request)
                        request = parse(request_cls, request)
                    check_request(request)
                    return await fn(request, Call(method, principal, context))
                except asyncio.CancelledError:
                    code = "cancelled"
                    raise
                except grpc.aio.AbortError:
                    code = "aborted"
                    raise
                except Exception as exc:
                    err = as_stratamem_error(exc)
                    code = _code(err)
                    if err.code == ErrorCode.INTERNAL:
                        _log.exception("rpc.internal", method=method)
                    span.set_attribute("stratamem.error_code", code)
                    await abort(context, err)
                    raise  # unreachable: abort raises
                finally:
                    (_log.debug if code == "ok" else _log.info)(
                        "rpc",
                        method=method,
                        code=code,
                        ms=round((time.perf_counter() - started) * 1000, 3),
                    )

        return handler

    def stream(
        self,
        method: str,
        fn: Callable[[Any, Call], AsyncIterator[Message]],
        request_cls: type[Message] | None = None,
    ) -> Callable[[Any, Any], AsyncIterator[Message]]:
        async def handler(request: Any, context: Any) -> AsyncIterator[Message]:
            code = "ok"
            with rpc_span(method, context.invocation_metadata()) as span:
                try:
                    principal = self.principal_of(context)
                    if request_cls is not None:
                        raw_request_size_check(request)
                        request = parse(request_cls, request)
                    check_request(request)
                    async for item in fn(request, Call(method, principal, context)):
                        yield item
                except asyncio.CancelledError:
                    code = "cancelled"
                    raise
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    err = as_stratamem_error(exc)
                    code = _code(err)
                    span.set_attribute("stratamem.error_code", code)
                    await abort(context, err)
                finally:
                    _log.debug("rpc.stream", method=method, code=code)

        return handler
