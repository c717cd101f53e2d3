"""Blocking JSON-over-HTTP POST (stdlib ``urllib``) with bounded, jittered retries.

Shared by the OpenAI-compatible LLM provider and embedder; callers run it in a worker thread.
"""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: Statuses worth another attempt (rate limit, transient server trouble).
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Statuses that will not fix themselves: bad key, no credit, forbidden.
TERMINAL_STATUS = frozenset({401, 402, 403})


class HttpError(Exception):
    """A failed call. ``status`` is None for network errors and timeouts."""

    def __init__(
        self, message: str, *, status: int | None = None, body: str = "", timeout: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.timeout = timeout
        self.retry_after: float | None = None
        self.attempts = 1

    @property
    def retryable(self) -> bool:
        return self.timeout or self.status is None or self.status in RETRYABLE_STATUS

    @property
    def terminal(self) -> bool:
        if self.status in TERMINAL_STATUS:
            return True
        low = self.body.lower()
        return any(
            s in low for s in ("insufficient balance", "invalid api key", "insufficient_quota")
        )


@dataclass(frozen=True)
class HttpResult:
    status: int
    data: Any
    attempts: int


def join_url(endpoint: str, path: str) -> str:
    """``endpoint`` may be the host, the ``/v1`` base, or the full URL of ``path``."""
    base = endpoint.rstrip("/")
    if base.endswith(path):
        return base
    if base.endswith("/v1"):
        return base + path
    return base + "/v1" + path


def _retry_after(err: urllib.error.HTTPError) -> float | None:
    value = err.headers.get("Retry-After") if err.headers else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def post_json_once(
    url: str, body: Mapping[str, Any], *, headers: Mapping[str, str], timeout_s: float
) -> tuple[int, Any]:
    payload = json.dumps(body).encode("utf-8")
    req = urllib.request.Request(url, data=payload, method="POST")
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json")
    for k, v in headers.items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            raw = resp.read()
            status = int(resp.status)
    except urllib.error.HTTPError as err:
        text = ""
        try:
            text = err.read().decode("utf-8", "replace")[:2000]
        except Exception:
            text = ""
        exc = HttpError(f"HTTP {err.code} from {url}", status=err.code, body=text)
        exc.retry_after = _retry_after(err)
        raise exc from None
    except TimeoutError as err:
        raise HttpError(f"timed out after {timeout_s:.1f}s calling {url}", timeout=True) from err
    except urllib.error.URLError as err:
        if isinstance(err.reason, TimeoutError):
            raise HttpError(
                f"timed out after {timeout_s:.1f}s calling {url}", timeout=True
            ) from err
        raise HttpError(f"cannot reach {url}: {err.reason}") from err
    except OSError as err:
        raise HttpError(f"cannot reach {url}: {err}") from err
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise HttpError(
            f"non-JSON answer from {url}", status=status, body=raw[:500].decode("utf-8", "replace")
        ) from err
    return status, data


def backoff_s(attempt: int, *, base_s: float = 0.25, cap_s: float = 8.0) -> float:
    """Full-jitter exponential back-off for retry ``attempt`` (1-based)."""
    return random.uniform(0.0, min(cap_s, base_s * (2 ** (attempt - 1))))


def post_json(
    url: str,
    body: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    max_retries: int,
    deadline: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    base_backoff_s: float = 0.25,
) -> HttpResult:
    """POST with at most ``max_retries`` retries on 429/5xx/timeouts/network errors.

    ``deadline`` (``time.monotonic()`` value) bounds the whole call including back-off.
    """
    attempt = 0
    while True:
        attempt += 1
        per_call = timeout_s
        if deadline is not None:
            per_call = min(per_call, deadline - time.monotonic())
            if per_call <= 0:
                raise HttpError(f"deadline passed before calling {url}", timeout=True)
        try:
            status, data = post_json_once(url, body, headers=headers, timeout_s=per_call)
            return HttpResult(status, data, attempt)
        except HttpError as err:
            if not err.retryable or err.terminal or attempt > max_retries:
                err.attempts = attempt
                raise
            wait = err.retry_after
            pause = (
                min(wait, 8.0) if wait is not None else backoff_s(attempt, base_s=base_backoff_s)
            )
            if deadline is not None and time.monotonic() + pause >= deadline:
                err.attempts = attempt
                raise
            sleep(pause)
