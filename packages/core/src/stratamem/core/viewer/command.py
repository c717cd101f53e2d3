"""``stratamem open`` and the viewer's part of ``stratamem serve`` (bind choice, serve.json URL).

``open`` is registered through ``register_commands`` like any plugin (``viewer/plugin.py``); the
port is the host's well-known one (OpenClaw 18799, Hermes 18800, DSH 18801, else 18798) unless
``viewer.port`` or ``--viewer`` says.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import webbrowser
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.home import pid_alive
from stratamem.core.commands.common import reads_home
from stratamem.core.config.settings import Section
from stratamem.core.telemetry import get_logger

_log = get_logger("viewer")

HOST_PORTS = {"openclaw": 18799, "hermes": 18800, "dsh": 18801}
DEFAULT_PORT = 18798


def host_of_home(home: Path, env: dict[str, str] | None = None) -> str | None:
    """Which host a home belongs to, from where it lives (``~/.openclaw/stratamem`` …)."""
    env = dict(os.environ) if env is None else env
    parent = home.parent
    for host, var in (("hermes", "HERMES_HOME"), ("dsh", "DSH_HOME")):
        if env.get(var) and Path(env[var]).expanduser().absolute() == parent:
            return host
    return {".openclaw": "openclaw", ".hermes": "hermes", ".dsh": "dsh"}.get(parent.name)


def choose_bind(home: Path, spec: str | None) -> tuple[str, int, bool] | None:
    """(host, port, explicit) for the viewer, or None when it is switched off."""
    from stratamem.core.config.loader import CONFIG_FILE, read_user_config

    if spec is not None:
        if spec.lower() in ("off", "no", "none", "false"):
            return None
        host, sep, port = spec.rpartition(":")
        if not sep or not port.isdigit() or int(port) > 65535:
            raise StratamemError(
                ErrorCode.INVALID_ARGUMENT,
                f"--viewer {spec!r}: use HOST:PORT, :PORT or off",
                {"viewer": spec},
            )
        return host or "127.0.0.1", int(port), True
    user = read_user_config(home / CONFIG_FILE).get("viewer") or {}
    if user.get("enabled") is False:
        return None
    host = str(user.get("bind_host") or "127.0.0.1")
    if "port" in user:
        return host, int(user["port"]), True
    return host, HOST_PORTS.get(host_of_home(home) or "", DEFAULT_PORT), False


async def start_for_serve(core: Any, service: Any, spec: str | None, token: str | None) -> Any:
    """Start the viewer next to the gRPC service; a busy default port falls back to a free one."""
    from stratamem.core.server.auth import normalise_tokens
    from stratamem.core.viewer.server import ViewerServer

    bind = choose_bind(Path(core.home), spec)
    if bind is None:
        return None
    host, port, explicit = bind
    tokens = normalise_tokens(token, Section("server", core.config.get("server"))["tokens"])
    viewer = ViewerServer(
        core,
        tokens=tokens,
        workspace_shared=getattr(service, "_workspace", None),
        activity=getattr(service, "activity", None),
    )
    try:
        await viewer.start(host, port)
    except OSError as exc:
        if explicit or exc.errno != errno.EADDRINUSE:
            raise StratamemError(
                ErrorCode.INVALID_ARGUMENT,
                f"cannot serve the viewer on {host}:{port}: {exc.strerror or exc}",
                {"host": host, "port": port},
            ) from exc
        _log.warning("viewer.port_busy", port=port, fallback="any free port")
        await viewer.start(host, 0)
    return viewer


def configure_open(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", default=argparse.SUPPRESS, help="runtime home of the server")
    parser.add_argument("--browser", action="store_true", help="also open it in a web browser")


@reads_home
def run_open(args: argparse.Namespace) -> int:
    """Print the running viewer's URL (only that, on stdout); exit 1 when none runs."""
    from stratamem.core.home import resolve_home
    from stratamem.core.server.app import read_serve_json

    home = resolve_home(getattr(args, "home", None))
    info = read_serve_json(home)
    url = (info or {}).get("viewer_url")
    pid = (info or {}).get("pid")
    alive = isinstance(pid, int) and pid_alive(pid)
    if not alive:
        print(
            f"stratamem open: no service runs for {home} "
            f"(start it with: stratamem start --home {home})",
            file=sys.stderr,
        )
        return 1
    if not url:  # `serve --viewer off`: another `serve` would only find the home owned (exit 3)
        print(
            f"stratamem open: the service of {home} runs without a viewer (pid {pid}; restart it "
            f"with one: stratamem stop --home {home} && stratamem start --home {home})",
            file=sys.stderr,
        )
        return 1
    print(url)
    if args.browser:
        webbrowser.open(str(url))
    return 0
