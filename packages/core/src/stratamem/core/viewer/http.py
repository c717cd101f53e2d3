"""The viewer's HTTP vocabulary on aiohttp: typed errors with a status, the request view the route
handlers read, JSON replies, and the bounded body read.

aiohttp owns the wire (parsing, keep-alive, chunking, header limits); this module only maps our typed
errors onto statuses and hands handlers a plain, already-authorised view of the request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.server.auth import OWNER, Principal

DEFAULT_MAX_BODY = 1024 * 1024
MAX_LINE_BYTES = 8 * 1024  # request line and each header line
MAX_HEADERS = 100
IDLE_TIMEOUT_S = 30.0

#: stable error code -> HTTP status
STATUS_OF: dict[ErrorCode, int] = {
    ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.CONFIG_INVALID: 400,
    ErrorCode.PROTOCOL_ERROR: 400,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.PERMISSION_DENIED: 403,
    ErrorCode.READ_ONLY: 403,
    ErrorCode.PATH_NOT_WRITABLE: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.SESSION_NOT_FOUND: 404,
    ErrorCode.EPISODE_NOT_FOUND: 404,
    ErrorCode.TRACE_NOT_FOUND: 404,
    ErrorCode.POLICY_NOT_FOUND: 404,
    ErrorCode.WORLD_MODEL_NOT_FOUND: 404,
    ErrorCode.SKILL_NOT_FOUND: 404,
    ErrorCode.FEEDBACK_NOT_FOUND: 404,
    ErrorCode.CONFIG_MISSING: 404,
    ErrorCode.UNKNOWN_METHOD: 405,
    ErrorCode.CONFLICT: 409,
    ErrorCode.ALREADY_EXISTS: 409,
    ErrorCode.QUOTA_EXCEEDED: 413,
    ErrorCode.UNSUPPORTED: 501,
    ErrorCode.ALREADY_SHUT_DOWN: 503,
    ErrorCode.BACKEND_UNAVAILABLE: 503,
    ErrorCode.EMBEDDING_UNAVAILABLE: 503,
    ErrorCode.LLM_UNAVAILABLE: 503,
    ErrorCode.DEADLINE_EXCEEDED: 504,
}

#: aiohttp's own refusals (router, body size) -> our codes
_CODE_OF_STATUS = {
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.UNKNOWN_METHOD,
    413: ErrorCode.INVALID_ARGUMENT,
}


class HttpError(StratamemError):
    """A typed error with an explicit HTTP status (e.g. 413 for an oversized body)."""

    def __init__(
        self, status: int, code: ErrorCode, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(code, message, details)
        self.status = status


def status_for(err: StratamemError) -> int:
    if isinstance(err, HttpError):
        return err.status
    return STATUS_OF.get(err.code, 500)


def from_aiohttp(exc: web.HTTPException, request: web.Request) -> HttpError:
    """aiohttp's router and body limit raise its own exceptions; give them our JSON shape."""
    status = exc.status
    details: dict[str, Any] = {"path": request.path}
    if status == 404:
        message = f"no route {request.path!r}"
    elif status == 405:
        message = f"{request.method} is not allowed on {request.path}"
        details["method"] = request.method
    else:
        message = exc.text or exc.reason
    code = _CODE_OF_STATUS.get(
        status, ErrorCode.PROTOCOL_ERROR if status < 500 else ErrorCode.INTERNAL
    )
    return HttpError(status, code, message, details)


@dataclass
class Request:
    """What a route handler sees: decoded path, query, headers, the (bounded) body, path params."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    peer: str
    body: bytes = b""
    params: dict[str, str] = field(default_factory=dict)
    principal: str = "loopback"
    #: the namespaces this caller may see (the home owner: every one; a scoped token: its own)
    access: Principal = OWNER

    @classmethod
    def of(cls, request: web.Request) -> Request:
        return cls(
            method=request.method,
            path=request.path,
            query=dict(request.query),
            headers=request.headers,
            peer=request.remote or "",
        )

    def json(self) -> Any:
        """The body as JSON; ``invalid_argument`` (400) when it is not JSON or not UTF-8."""
        ctype = self.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise HttpError(
                415,
                ErrorCode.INVALID_ARGUMENT,
                "send the body as Content-Type: application/json",
                {"content_type": ctype},
            )
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise HttpError(
                400, ErrorCode.INVALID_ARGUMENT, f"the body is not valid JSON: {exc}"
            ) from None

    def json_object(self) -> dict[str, Any]:
        data = self.json()
        if not isinstance(data, dict):
            raise HttpError(400, ErrorCode.INVALID_ARGUMENT, "the body must be a JSON object")
        return data


def too_large(length: int | None, max_body: int) -> HttpError:
    shown = "more" if length is None else str(length)
    return HttpError(
        413,
        ErrorCode.INVALID_ARGUMENT,
        f"request body too large ({shown} > {max_body} bytes)",
        {"max_bytes": max_body, **({"length": length} if length is not None else {})},
    )


async def read_body(
    request: web.Request, max_body: int, timeout_s: float = IDLE_TIMEOUT_S
) -> bytes:
    """The body, refused with 413 before reading when its declared length is over the limit, and
    with 408 when it does not arrive within ``timeout_s`` (a trickled body holds no connection).

    aiohttp bounds undeclared (chunked) bodies with ``client_max_size`` and drains what a refused
    client still sends (lingering close), so the client reads our 413 instead of a reset.
    """
    if not request.body_exists:
        return b""
    declared = request.content_length
    if declared is not None and declared > max_body:
        raise too_large(declared, max_body)
    try:
        async with asyncio.timeout(timeout_s):
            return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise too_large(declared, max_body) from None
    except TimeoutError:
        raise HttpError(
            408,
            ErrorCode.DEADLINE_EXCEEDED,
            f"the request body did not arrive within {timeout_s:g} s",
            {"timeout_s": timeout_s},
        ) from None


def json_reply(data: Any, status: int = 200) -> web.Response:
    text = json.dumps(data, ensure_ascii=False, default=str, allow_nan=False)
    return web.Response(
        status=status,
        body=text.encode("utf-8"),
        headers={"Content-Type": "application/json; charset=utf-8"},
    )


def error_reply(err: StratamemError) -> web.Response:
    return json_reply({"error": err.to_dict()}, status_for(err))
