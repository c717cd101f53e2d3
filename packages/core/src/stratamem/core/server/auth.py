"""Who is calling: socket clients are the owner; TCP clients present a bearer token mapped to namespaces.

Tokens come from ``--token`` (any namespace) and ``config.yaml`` ``server.tokens`` (``{token: [ns]}``
where a namespace is ``agent_kind/profile_id`` and ``*`` matches anything). Comparison is constant time.
"""

from __future__ import annotations

import fnmatch
import hmac
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from stratamem.contract.dtos import Namespace
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.server.errors import trailers_for
from stratamem.core.telemetry.audit import audit

ANY = "*"


@dataclass(frozen=True)
class Principal:
    """The caller of one RPC: ``owner`` (socket), ``token`` (TCP) or ``loopback`` (TCP, no tokens)."""

    kind: str
    namespaces: tuple[str, ...] = (ANY,)

    @property
    def unrestricted(self) -> bool:
        return ANY in self.namespaces

    def allows(self, ns: Namespace) -> bool:
        key = f"{ns.agent_kind}/{ns.profile_id}"
        return any(fnmatch.fnmatchcase(key, pat) for pat in self.namespaces)

    def default_namespace(self) -> Namespace | None:
        """The one concrete namespace of a single-namespace token (used when a request names none)."""
        concrete = [p for p in self.namespaces if not any(c in p for c in "*?[")]
        if len(self.namespaces) == 1 and len(concrete) == 1 and "/" in concrete[0]:
            agent, profile = concrete[0].split("/", 1)
            return Namespace(agent_kind=agent, profile_id=profile)
        return None


OWNER = Principal("owner")
LOOPBACK = Principal("loopback")


def _denied(message: str, **details: Any) -> StratamemError:
    return StratamemError(ErrorCode.PERMISSION_DENIED, message, details)


def authorize_namespace(
    principal: Principal, ns: Namespace | None, implied: Namespace | None = None
) -> Namespace | None:
    """The namespace a call may act in (the one scope rule for gRPC and the viewer).

    ``ns`` itself when the principal allows it. A request that names none acts in the token's only
    namespace when it has exactly one, else in ``implied`` (the ``<agent>/default`` a turn's agent
    implies) when the token allows that; otherwise it is refused, naming the namespaces allowed.
    """
    if principal.unrestricted:
        return ns
    if ns is None:
        default = principal.default_namespace()
        if default is not None:
            return default
        if implied is not None and principal.allows(implied):
            return implied
        allowed = list(principal.namespaces)
        raise _denied(
            f"this token may act in {', '.join(allowed)}: name one in the request's namespace "
            "(a request without one acts in the token's namespace only when it has exactly one)",
            allowed=allowed,
        )
    if not principal.allows(ns):
        audit(
            "namespace.refused",
            actor=principal.kind,
            namespace=ns,
            allowed=list(principal.namespaces),
        )
        raise _denied(
            f"namespace {ns.agent_kind}/{ns.profile_id} is not allowed for this token",
            namespace=f"{ns.agent_kind}/{ns.profile_id}",
        )
    return ns


def normalise_tokens(
    cli_token: str | None, configured: Mapping[str, Any] | None
) -> dict[str, tuple[str, ...]]:
    """``{token: namespace patterns}``; ``config_invalid`` on a malformed entry."""
    out: dict[str, tuple[str, ...]] = {}
    for token, spaces in (configured or {}).items():
        if isinstance(spaces, str):
            spaces = [spaces]
        if (
            not isinstance(token, str)
            or not token
            or not isinstance(spaces, Sequence)
            or not all(isinstance(s, str) and s for s in spaces)
        ):
            raise StratamemError(
                ErrorCode.CONFIG_INVALID,
                "server.tokens must map each token to a list of AGENT/PROFILE namespaces",
                {"key": "server.tokens"},
            )
        out[token] = tuple(spaces)
    if cli_token:
        out[cli_token] = (ANY,)
    return out


class Authenticator:
    """Resolves ``authorization: Bearer <token>`` metadata to a ``Principal`` (constant-time match)."""

    def __init__(self, tokens: Mapping[str, tuple[str, ...]]) -> None:
        self._tokens = [(t.encode(), spaces) for t, spaces in tokens.items()]

    @property
    def required(self) -> bool:
        return bool(self._tokens)

    def authenticate(self, metadata: Sequence[tuple[str, Any]] | None) -> Principal:
        if not self._tokens:
            return LOOPBACK
        presented = b""
        for key, value in metadata or ():
            if key.lower() == "authorization":
                raw = value.encode() if isinstance(value, str) else bytes(value)
                if raw[:7].lower() == b"bearer ":
                    presented = raw[7:].strip()
                break
        found: tuple[str, ...] | None = None
        for token, spaces in self._tokens:  # no early exit: time does not depend on which matched
            if hmac.compare_digest(token, presented) and presented:
                found = spaces
        if found is None:
            raise StratamemError(
                ErrorCode.UNAUTHENTICATED,
                "a valid 'authorization: Bearer <token>' is required",
            )
        return Principal("token", found)


def _rejecting_handler(handler: grpc.RpcMethodHandler, err: StratamemError) -> Any:
    async def reject(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        context.set_trailing_metadata(trailers_for(err))
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, err.message)

    async def reject_stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await reject(request, context)
        yield  # pragma: no cover - abort raises

    des, ser = handler.request_deserializer, handler.response_serializer
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(reject, des, ser)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(reject_stream, des, ser)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(reject, des, ser)
    return grpc.stream_stream_rpc_method_handler(reject_stream, des, ser)


class BearerAuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Rejects every call without a valid token on a TCP server, before any handler runs."""

    def __init__(self, authenticator: Authenticator) -> None:
        self.authenticator = authenticator

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        try:
            self.authenticator.authenticate(handler_call_details.invocation_metadata)
        except StratamemError as err:
            audit("token.refused", actor="tcp", method=handler_call_details.method)
            return _rejecting_handler(handler, err)
        return handler
