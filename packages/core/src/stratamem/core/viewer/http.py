"""A small HTTP/1.1 server on asyncio streams: bounded requests, JSON errors, streamed (SSE) replies.

The viewer needs a dozen JSON routes, static files and one event stream on the serve loop; the stdlib
covers that without a web framework, and every limit (header size, body size, idle time) is ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from stratamem.contract.errors import ErrorCode, StratamemError

MAX_HEADER_BYTES = 16 * 1024
DEFAULT_MAX_BODY = 1024 * 1024
IDLE_TIMEOUT_S = 30.0
MAX_DISCARD_BYTES = 64 * 1024 * 1024

REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    304: "Not Modified",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    411: "Length Required",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}

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


@dataclass
class Request:
    method: str
    target: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    peer: str
    params: dict[str, str] = field(default_factory=dict)
    principal: str = "loopback"

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


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Response:
        text = json.dumps(data, ensure_ascii=False, default=str, allow_nan=False)
        return cls(status, text.encode("utf-8"), "application/json; charset=utf-8")

    @classmethod
    def error(cls, err: StratamemError) -> Response:
        return cls.json({"error": err.to_dict()}, status_for(err))


@dataclass
class StreamResponse:
    """A streamed reply (SSE): ``chunks`` yields encoded pieces until the client or server goes."""

    chunks: AsyncIterator[bytes]
    content_type: str = "text/event-stream; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response | StreamResponse]]


def _bad(message: str, status: int = 400, **details: Any) -> HttpError:
    return HttpError(status, ErrorCode.PROTOCOL_ERROR, message, details)


async def read_request(reader: asyncio.StreamReader, peer: str, max_body: int) -> Request | None:
    """One request, or None when the client closed the connection before sending one."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise _bad("incomplete request head") from None
    except asyncio.LimitOverrunError:
        raise _bad("request head too large", 431, max_bytes=MAX_HEADER_BYTES) from None
    if len(head) > MAX_HEADER_BYTES:
        raise _bad("request head too large", 431, max_bytes=MAX_HEADER_BYTES)
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes anything
        raise _bad("undecodable request head") from None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _bad("malformed request line")
    method, target, _ = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise _bad("malformed header line")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise _bad("chunked request bodies are not accepted; send Content-Length", 411)
    length_text = headers.get("content-length", "0") or "0"
    if not length_text.isdigit():
        raise _bad("bad Content-Length")
    length = int(length_text)
    if length > max_body:
        await _discard(reader, length)
        raise HttpError(
            413,
            ErrorCode.INVALID_ARGUMENT,
            f"request body too large ({length} > {max_body} bytes)",
            {"max_bytes": max_body, "length": length},
        )
    body = await reader.readexactly(length) if length else b""
    split = urlsplit(target)
    raw_path = split.path or "/"
    if not raw_path.startswith("/"):
        raise _bad("request target must be an absolute path")
    query = dict(parse_qsl(split.query, keep_blank_values=True))
    return Request(method.upper(), target, unquote(raw_path), query, headers, body, peer)


async def _discard(reader: asyncio.StreamReader, length: int) -> None:
    """Read (and drop) an oversized body so the client can still read our 413 before we close."""
    left = min(length, MAX_DISCARD_BYTES)
    with contextlib.suppress(Exception):
        while left > 0:
            chunk = await asyncio.wait_for(reader.read(min(left, 65536)), 5.0)
            if not chunk:
                break
            left -= len(chunk)


def _head(status: int, content_type: str, headers: dict[str, str], length: int | None) -> bytes:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
    base = {
        "Content-Type": content_type,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }
    base.update(headers)
    if length is not None:
        base["Content-Length"] = str(length)
    lines += [f"{k}: {v}" for k, v in base.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class HttpServer:
    """Serve ``handler`` on one TCP listener; ``close()`` ends open streams at once."""

    def __init__(self, handler: Handler, *, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.handler = handler
        self.max_body = max_body
        self.server: asyncio.Server | None = None
        self.closing = asyncio.Event()
        self._conns: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self.server = await asyncio.start_server(
            self._serve_conn, host, port, limit=MAX_HEADER_BYTES, reuse_address=True
        )
        sock = self.server.sockets[0].getsockname()
        return str(sock[0]), int(sock[1])

    async def close(self) -> None:
        self.closing.set()
        if self.server is not None:
            self.server.close()
        for task in list(self._conns):
            task.cancel()
        if self._conns:
            await asyncio.gather(*self._conns, return_exceptions=True)
        if self.server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2.0)

    async def _serve_conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        peer_info = writer.get_extra_info("peername")
        peer = str(peer_info[0]) if peer_info else ""
        try:
            while not self.closing.is_set():
                try:
                    req = await asyncio.wait_for(
                        read_request(reader, peer, self.max_body), IDLE_TIMEOUT_S
                    )
                except StratamemError as err:
                    await self._write(writer, Response.error(err), keep_alive=False)
                    break
                except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
                    break
                if req is None:
                    break
                resp = await self.handler(req)
                keep = req.headers.get("connection", "").lower() != "close"
                if isinstance(resp, StreamResponse):
                    await self._stream(writer, resp)
                    break
                await self._write(writer, resp, keep_alive=keep, head_only=req.method == "HEAD")
                if not keep:
                    break
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._conns.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _write(
        self,
        writer: asyncio.StreamWriter,
        resp: Response,
        *,
        keep_alive: bool,
        head_only: bool = False,
    ) -> None:
        headers = dict(resp.headers)
        headers["Connection"] = "keep-alive" if keep_alive else "close"
        writer.write(_head(resp.status, resp.content_type, headers, len(resp.body)))
        if not head_only:
            writer.write(resp.body)
        await writer.drain()

    async def _stream(self, writer: asyncio.StreamWriter, resp: StreamResponse) -> None:
        headers = {"Connection": "close", "X-Accel-Buffering": "no", **resp.headers}
        writer.write(_head(200, resp.content_type, headers, None))
        await writer.drain()
        try:
            async for chunk in resp.chunks:
                writer.write(chunk)
                await writer.drain()
        finally:
            aclose = getattr(resp.chunks, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
