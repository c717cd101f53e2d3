"""A scripted OpenAI-compatible HTTP server on loopback, for tests of anything that calls a paid LLM.

Real HTTP over a real socket; only the model is scripted (valid/malformed JSON, delays, 429, 401...).
"""

from __future__ import annotations

import collections
import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class StubAnswer:
    """One scripted answer. ``content`` becomes a chat completion; ``body`` is sent verbatim."""

    status: int = 200
    content: str | None = None
    body: Any = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = None


@dataclass
class StubRequest:
    path: str
    headers: dict[str, str]
    json: Any


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic, not normalised vector for ``text`` (so callers must normalise)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [((digest[i % len(digest)] - 128) / 16.0) for i in range(dim)]


class StubOpenAIServer:
    """``with StubOpenAIServer() as s: s.push("chat", StubAnswer(content='{"ok": true}'))``.

    Unscripted chat calls answer ``default_content``; unscripted embedding calls answer
    ``fake_vector(text, embedding_dim)`` per input.
    """

    def __init__(self, *, embedding_dim: int = 16, default_content: str = "{}") -> None:
        self.embedding_dim = embedding_dim
        self.default_content = default_content
        self.requests: list[StubRequest] = []
        self._queues: dict[str, collections.deque[StubAnswer]] = collections.defaultdict(
            collections.deque
        )
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.handler: Callable[[str, Any], StubAnswer | None] | None = None

    @property
    def url(self) -> str:
        """The ``/v1`` base URL (what goes into ``llm.endpoint`` / ``embedding.endpoint``)."""
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def push(self, kind: str, *answers: StubAnswer) -> None:
        """Queue answers for ``kind`` ``"chat"`` or ``"embeddings"`` (served in order)."""
        with self._lock:
            self._queues[kind].extend(answers)

    def calls(self, kind: str) -> list[StubRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith(kind_path(kind))]

    def _next(self, kind: str, body: Any) -> StubAnswer:
        with self._lock:
            q = self._queues[kind]
            if q:
                return q.popleft()
        if self.handler is not None:
            ans = self.handler(kind, body)
            if ans is not None:
                return ans
        if kind == "embeddings":
            inputs = body.get("input", []) if isinstance(body, dict) else []
            if isinstance(inputs, str):
                inputs = [inputs]
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": fake_vector(str(t), self.embedding_dim),
                }
                for i, t in enumerate(inputs)
            ]
            return StubAnswer(body={"object": "list", "data": data, "model": body.get("model", "")})
        return StubAnswer(content=self.default_content)

    def _respond(self, kind: str, req_body: Any) -> tuple[int, dict[str, str], bytes, float]:
        ans = self._next(kind, req_body)
        if ans.body is not None:
            payload = ans.body if isinstance(ans.body, (bytes, str)) else json.dumps(ans.body)
        elif ans.status >= 400:
            payload = json.dumps(
                {"error": {"message": f"stub status {ans.status}", "code": ans.status}}
            )
        else:
            usage = ans.usage or {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
            payload = json.dumps(
                {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "model": req_body.get("model", "stub")
                    if isinstance(req_body, dict)
                    else "stub",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": ans.content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                }
            )
        raw = payload.encode() if isinstance(payload, str) else payload
        return ans.status, ans.headers, raw, ans.delay_s

    def __enter__(self) -> StubOpenAIServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                with outer._lock:
                    outer.requests.append(StubRequest(self.path, dict(self.headers.items()), body))
                kind = "embeddings" if self.path.endswith("/embeddings") else "chat"
                status, headers, data, delay = outer._respond(kind, body)
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


def kind_path(kind: str) -> str:
    return "/embeddings" if kind == "embeddings" else "/chat/completions"
