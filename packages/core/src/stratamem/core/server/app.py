"""Assemble and run the service of one home: a Unix-socket server (the owner's) and an optional TCP one.

The socket server trusts its callers (the 0600 socket admits only the owner's user); the TCP server
demands a bearer token whenever tokens exist and refuses a non-loopback bind without one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.config.defaults import DEFAULTS
from stratamem.core.config.settings import Section
from stratamem.core.server import sockets
from stratamem.core.server.auth import (
    OWNER,
    Authenticator,
    BearerAuthInterceptor,
    Principal,
    normalise_tokens,
)
from stratamem.core.server.host_llm import HostLlmBroker, add_host_llm, register_provider
from stratamem.core.server.idle import Activity, count_activity
from stratamem.core.server.limits import TRANSPORT_OPTIONS
from stratamem.core.server.memory_service import MemoryServicer
from stratamem.core.server.rpc import Wrapper
from stratamem.core.telemetry import get_logger

_log = get_logger("server")

SERVE_JSON = "serve.json"
SERVICE_NAMES = (
    "stratamem.v1.MemoryService",
    "stratamem.v1.WorkspaceMemoryService",
    "stratamem.v1.HostLlm",
)


@dataclass
class ServeOptions:
    """What ``stratamem serve`` was asked for."""

    listen: list[str] = field(default_factory=list)
    token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None
    drain_s: float = 10.0
    #: host services of installed adapters (``stratamem serve``; not the socket of an embedded owner)
    host_services: bool = True


@dataclass
class ServiceContext:
    """Handed to host services registered through ``register_host_services``."""

    home: Path
    config: dict[str, Any]
    wrapper: Wrapper
    host_llm: HostLlmBroker
    #: ``async () -> None`` callbacks awaited when the service stops, after the servers have
    #: drained: a host service cancels and awaits its own background tasks there
    on_stop: list[Callable[[], Awaitable[None]]] = field(default_factory=list)


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_listen(spec: str) -> tuple[str, str, int]:
    """``unix:PATH`` → ("unix", PATH, 0); ``HOST:PORT`` → ("tcp", HOST, PORT)."""
    if spec.startswith("unix:"):
        path = spec[5:]
        if not path:
            raise StratamemError(ErrorCode.INVALID_ARGUMENT, "unix: needs a path", {"listen": spec})
        return "unix", path, 0
    host, sep, port = spec.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT,
            f"--listen {spec!r}: use unix:PATH or HOST:PORT",
            {"listen": spec},
        )
    return "tcp", host or "127.0.0.1", int(port)


def _tls_credentials(opts: ServeOptions, tls_cfg: dict[str, Any]) -> grpc.ServerCredentials | None:
    cert = opts.tls_cert or tls_cfg.get("cert_file") or ""
    key = opts.tls_key or tls_cfg.get("key_file") or ""
    ca = opts.tls_client_ca or tls_cfg.get("client_ca_file") or ""
    if not cert and not key:
        return None
    if not (cert and key):
        raise StratamemError(ErrorCode.CONFIG_INVALID, "TLS needs both a certificate and a key")
    try:
        pair = (Path(key).read_bytes(), Path(cert).read_bytes())
        root = Path(ca).read_bytes() if ca else None
    except OSError as exc:
        raise StratamemError(ErrorCode.CONFIG_INVALID, f"cannot read TLS files: {exc}") from exc
    return grpc.ssl_server_credentials(
        [pair], root_certificates=root, require_client_auth=bool(root)
    )


class Service:
    """A running service over one open core."""

    def __init__(self, core: Any, opts: ServeOptions | None = None) -> None:
        self.core = core
        self.opts = opts or ServeOptions()
        self.home = Path(core.home)
        self.config: dict[str, Any] = core.config
        self.broker = HostLlmBroker(on_default_lenders=self._borrow_host_llm)
        self._borrowed_llm = False
        self.health = health.aio.HealthServicer()
        self.servers: list[grpc.aio.Server] = []
        self.socket_path: Path | None = None
        self.tcp_address: str | None = None
        self.serve_json = sockets.run_dir(self.home) / SERVE_JSON
        self._unregister_llm: Any = None
        self._workspace: dict[str, Any] = {}
        #: host services' stop callbacks (``ServiceContext.on_stop``), shared by every server
        self._on_stop: list[Callable[[], Awaitable[None]]] = []
        self.closing = asyncio.Event()
        self.viewer_url: str | None = None
        #: calls in flight / last call, for the idle exit of ``stratamem serve``
        self.activity = Activity()

    def _borrow_host_llm(self, lenders: int) -> None:
        """A host that offers its model as the default (``HostLlmHello.as_default``) is the core's
        LLM while it is connected, if the home's config names no provider; the core goes back to
        its deterministic fallbacks when the last such host leaves."""
        provider = str(Section("llm", self.config.get("llm")).get_str("provider") or "").strip()
        if provider not in ("", "none") or not hasattr(self.core, "llm"):
            return
        if lenders and self.core.llm is None:
            from stratamem.core.llm.host import create_host_llm

            self.core.llm = create_host_llm(self.config.get("llm") or {})
            self._borrowed_llm = True
            _log.info("llm.borrowed_from_host", lenders=lenders)
        elif not lenders and self._borrowed_llm:
            self.core.llm = None
            self._borrowed_llm = False
            _log.info("llm.host_lender_left")

    # ------------------------------------------------------------------ building
    def _server(self, principal_of: Any, interceptors: list[Any]) -> grpc.aio.Server:
        server = count_activity(
            grpc.aio.server(
                options=[*TRANSPORT_OPTIONS, ("grpc.so_reuseport", 0)],
                interceptors=interceptors or None,
            ),
            self.activity,
        )
        wrapper = Wrapper(principal_of)
        MemoryServicer(self.core, wrapper, self.closing).add_to_server(server)
        self._add_workspace(server, wrapper)
        add_host_llm(server, self.broker, wrapper)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection(
            (*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), server
        )
        if self.opts.host_services:
            self._add_host_services(server, wrapper)
        return server

    def _add_workspace(self, server: grpc.aio.Server, wrapper: Wrapper) -> None:
        try:
            from stratamem.core.server.workspace_service import add_workspace_service
        except ImportError:
            return  # not wired: the service answers UNIMPLEMENTED
        add_workspace_service(server, self.core, wrapper, self._workspace)

    def _add_host_services(self, server: grpc.aio.Server, wrapper: Wrapper) -> None:
        from stratamem.core.plugins import collect

        ctx = ServiceContext(self.home, self.config, wrapper, self.broker, self._on_stop)
        for name, add_to_server in collect("register_host_services"):
            try:
                add_to_server(server, self.core, ctx)
            except Exception:
                _log.exception("host_service.failed", name=name)

    async def start(self) -> Service:
        unix_path: Path | None = None
        tcp: list[tuple[str, int]] = []
        for spec in self.opts.listen:
            kind, host, port = parse_listen(spec)
            if kind == "unix":
                unix_path = Path(host)
            else:
                tcp.append((host, port))
        if len(tcp) > 1:
            raise StratamemError(ErrorCode.INVALID_ARGUMENT, "at most one HOST:PORT listener")
        server_cfg = Section("server", self.config.get("server"))
        tokens = normalise_tokens(self.opts.token, server_cfg["tokens"])
        for host, _ in tcp:
            if not is_loopback(host) and not tokens:
                raise StratamemError(
                    ErrorCode.PERMISSION_DENIED,
                    f"refusing to listen on non-loopback {host!r} without a token "
                    "(--token or server.tokens in config.yaml)",
                    {"host": host},
                )
        # the owner's socket, always
        sock = unix_path or sockets.socket_path_for(
            self.home, server_cfg.get_str("socket") or str(DEFAULTS["server"]["socket"])
        )
        sock.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        sockets.clear_stale(sock)
        owner_server = self._server(lambda ctx: OWNER, [])
        old = os.umask(0o177)
        try:
            owner_server.add_insecure_port(f"unix:{sock}")
        finally:
            os.umask(old)
        await owner_server.start()
        sockets.restrict(sock)
        self.servers.append(owner_server)
        self.socket_path = sock
        if tcp:
            host, port = tcp[0]
            auth = Authenticator(tokens)

            def principal_of(ctx: Any) -> Principal:
                return auth.authenticate(ctx.invocation_metadata())

            tcp_server = self._server(
                principal_of, [BearerAuthInterceptor(auth)] if auth.required else []
            )
            creds = _tls_credentials(self.opts, dict(server_cfg["tls"] or {}))
            target = f"[{host.strip('[]')}]:{port}" if ":" in host.strip("[]") else f"{host}:{port}"
            bound = (
                tcp_server.add_secure_port(target, creds)
                if creds is not None
                else tcp_server.add_insecure_port(target)
            )
            if not bound:
                raise StratamemError(ErrorCode.INVALID_ARGUMENT, f"cannot bind {target}")
            await tcp_server.start()
            self.servers.append(tcp_server)
            self.tcp_address = target.rsplit(":", 1)[0] + f":{bound}"
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._unregister_llm = register_provider(self.broker)
        lock = getattr(self.core, "lock", None)
        if lock is not None and hasattr(lock, "set_socket"):
            lock.set_socket(str(sock))
        self._write_serve_json()
        _log.info("server.ready", socket=str(sock), tcp=self.tcp_address, pid=os.getpid())
        return self

    def _write_serve_json(self) -> None:
        from stratamem.contract import __version__ as contract_version
        from stratamem.core import __version__

        data = {
            "pid": os.getpid(),
            "uid": os.getuid(),
            "version": __version__,
            "contract_version": contract_version,
            "socket": str(self.socket_path),
            "tcp": self.tcp_address,
            "viewer_url": self.viewer_url,
            "epoch": getattr(getattr(self.core, "bus", None), "epoch", None),
            "started_at": int(time.time() * 1000),
        }
        self.serve_json.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.serve_json.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.serve_json)

    # ------------------------------------------------------------------ stopping
    async def stop(self, grace_s: float | None = None) -> None:
        """Stop accepting, let in-flight calls finish within ``grace_s``, then close the servers."""
        grace = self.opts.drain_s if grace_s is None else grace_s
        with contextlib.suppress(Exception):
            await self.health.enter_graceful_shutdown()
        self.closing.set()  # long-lived streams end now; unary calls get the grace period
        self.broker.close_all()
        await asyncio.gather(*(s.stop(grace) for s in self.servers), return_exceptions=True)
        self.servers.clear()
        while self._on_stop:
            stop = self._on_stop.pop(0)
            try:
                await stop()
            except Exception:
                _log.exception("host_service.stop_failed")
        if self._unregister_llm is not None:
            self._unregister_llm()
            self._unregister_llm = None
        for key in [k for k in self._workspace if k.startswith("memory")]:
            memory = self._workspace.pop(key)
            if memory is not None:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(memory.close)
        with contextlib.suppress(FileNotFoundError):
            self.serve_json.unlink()
        if self.socket_path is not None:
            sockets.remove(self.socket_path)
        lock = getattr(self.core, "lock", None)
        if lock is not None and getattr(lock, "held", False) and hasattr(lock, "set_socket"):
            with contextlib.suppress(Exception):
                lock.set_socket(None)


def read_serve_json(home: Path) -> dict[str, Any] | None:
    path = sockets.run_dir(home) / SERVE_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
