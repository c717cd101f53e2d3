"""Who may use the viewer: loopback callers by default; anyone else only with a bearer token.

Loopback callers without a token and unrestricted tokens (``--token``, or a ``server.tokens`` entry
allowing ``*``) are the home owner: every namespace, config, logs, workspace. A token scoped to some
namespaces sees those namespaces only, as over gRPC (``server.auth.Principal``, the same patterns):
each listing, detail, metric and event is filtered to them, and the owner's routes (config, logs,
workspace files) answer 403. A non-loopback bind without an unrestricted token is refused at start.
Loopback requests must name a loopback host (DNS-rebinding guard), and writes must be JSON from our
own origin (no cross-site form posts).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.server.auth import OWNER, Principal
from stratamem.core.telemetry.audit import audit
from stratamem.core.viewer.http import HttpError, Request

COOKIE = "stratamem_viewer_token"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ANY = "*"

#: ``{token: namespace patterns}`` as ``server.auth.normalise_tokens`` gives it, or plain tokens (any)
Tokens = Mapping[str, Iterable[str]] | Iterable[str]


def _scopes(tokens: Tokens) -> dict[str, tuple[str, ...]]:
    if isinstance(tokens, Mapping):
        return {t: tuple(spaces) for t, spaces in tokens.items() if t}
    return {t: (ANY,) for t in tokens if t}


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(addr, "ipv4_mapped", None)
    return bool(addr.is_loopback or (mapped is not None and mapped.is_loopback))


def _host_name(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def check_bind(host: str, tokens: Tokens) -> None:
    """Refuse a non-loopback bind unless at least one unrestricted token exists."""
    if not is_loopback(host) and not any(ANY in s for s in _scopes(tokens).values()):
        raise StratamemError(
            ErrorCode.PERMISSION_DENIED,
            f"refusing to serve the viewer on non-loopback {host!r} without a token "
            "(--token, or a server.tokens entry allowing '*' in config.yaml)",
            {"host": host},
        )


def refused(req: Request, err: HttpError) -> None:
    """Audit a refused viewer request: a bad or missing token (401) or an access refusal (403)."""
    audit(
        "token.refused" if err.status == 401 else "viewer.refused",
        actor="viewer",
        method=req.method,
        path=req.path[:200],
        peer=req.peer,
        status=err.status,
        reason=err.message,
    )


class Guard:
    """Per-request checks; raises a typed ``HttpError`` (401/403) and the request changes nothing."""

    def __init__(self, tokens: Tokens) -> None:
        self.scopes = _scopes(tokens)
        self.tokens = list(self.scopes)

    def token_of(self, req: Request) -> str | None:
        auth = req.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        for part in req.headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and value:
                return value
        return req.query.get("token") or None

    def _scope(self, token: str | None) -> tuple[str, ...] | None:
        """The namespaces ``token`` allows, or None when it is no token of ours (constant time)."""
        found: tuple[str, ...] | None = None
        for known, spaces in self.scopes.items():  # no early exit
            if token and hmac.compare_digest(token.encode(), known.encode()):
                found = spaces
        return found

    def _access(self, token: str | None) -> Principal:
        """What ``token`` may see; ``unauthenticated`` (401) when it is no token of ours."""
        scope = self._scope(token)
        if scope is None:
            raise HttpError(401, ErrorCode.UNAUTHENTICATED, "the viewer token is not valid")
        return Principal("token", scope)

    def check(self, req: Request) -> None:
        """Authenticate ``req`` and set what it may see (``req.access``); raise 401/403 otherwise
        (each refusal goes to ``audit.log``, like the gRPC service's)."""
        try:
            self._check(req)
        except HttpError as err:
            refused(req, err)
            raise

    def _check(self, req: Request) -> None:
        token = self.token_of(req)
        if is_loopback(req.peer):
            if token is not None and self.tokens:
                req.access = self._access(token)
            else:
                req.access = OWNER
            req.principal = "token" if token else "loopback"
            if req.principal == "loopback" and not is_loopback(
                _host_name(req.headers.get("host", ""))
            ):
                raise HttpError(
                    403,
                    ErrorCode.PERMISSION_DENIED,
                    "requests without a token must address the viewer by a loopback name",
                    {"host": req.headers.get("host", "")},
                )
        else:
            if not self.tokens:
                raise HttpError(
                    403,
                    ErrorCode.PERMISSION_DENIED,
                    "the viewer only answers loopback callers (no token is configured)",
                    {"peer": req.peer},
                )
            if token is None:
                raise HttpError(
                    401,
                    ErrorCode.UNAUTHENTICATED,
                    "a token is required from a non-loopback address "
                    "(Authorization: Bearer TOKEN, or ?token=TOKEN once)",
                    {"peer": req.peer},
                )
            req.access = self._access(token)
            req.principal = "token"
        if req.method in WRITE_METHODS:
            origin = req.headers.get("origin")
            if origin and urlsplit(origin).netloc != req.headers.get("host", ""):
                raise HttpError(
                    403,
                    ErrorCode.PERMISSION_DENIED,
                    "cross-origin writes are refused",
                    {"origin": origin},
                )
