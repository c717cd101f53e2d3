"""``stratamem serve`` runs a home's resident service until SIGTERM/SIGINT or its idle exit;
``stratamem health`` asks it (starting it on demand, like every thin client).

Exit codes: 0 clean stop (SIGTERM/SIGINT drain, idle exit), 2 bad usage/config, 3 the home has another
owner (said at once, before anything heavy is imported, with the owner's pid and socket).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import signal
import sys
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.client import SERVE_PREFIX, SERVE_READY_PREFIX
from stratamem.core.commands.common import reads_home, through_service
from stratamem.core.config.settings import Section

EXIT_OWNED = 3


def configure_serve(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", default=argparse.SUPPRESS, help="runtime home to serve")
    parser.add_argument(
        "--listen",
        action="append",
        default=[],
        help="unix:PATH (the owner socket) or HOST:PORT (TCP; :0 picks a free port); repeatable",
    )
    parser.add_argument("--token", default=None, help="bearer token every TCP call must present")
    parser.add_argument("--tls-cert", default=None, help="PEM certificate for TCP")
    parser.add_argument("--tls-key", default=None, help="PEM private key for TCP")
    parser.add_argument("--tls-client-ca", default=None, help="PEM CA bundle: require client certs")
    parser.add_argument(
        "--drain-timeout", type=float, default=10.0, help="seconds to finish in-flight calls"
    )
    parser.add_argument(
        "--viewer", default=None, help="viewer HOST:PORT (:0 picks a free port) or off"
    )
    parser.add_argument(
        "--idle-exit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop after this long without calls or open streams (default server.idle_exit_s; 0 never)",
    )


def _owned_message(home: object, pid: object, sock: object) -> str:
    return f"{SERVE_PREFIX}{home} is already served by process {pid}" + (
        f" on {sock}" if sock else ""
    )


async def serve(args: argparse.Namespace) -> int:
    from stratamem.contract.hostkit.client import owner_record
    from stratamem.core.home import prepare_home, resolve_home

    home = resolve_home(getattr(args, "home", None))
    prepare_home(home)  # path errors before any heavy import
    owner = owner_record(home)
    if owner is not None:  # answered at once; the lock below still decides a close race
        print(
            _owned_message(home, owner.get("pid", "unknown"), owner.get("socket")), file=sys.stderr
        )
        return EXIT_OWNED
    from stratamem.core.config.loader import load_config

    load_config(home)  # a bad config.yaml answers config_invalid before the engine is imported
    from stratamem.core.engine.assemble import open_local_core
    from stratamem.core.server.app import ServeOptions, Service
    from stratamem.core.server.idle import exit_when_idle

    try:
        core = await open_local_core(home)
    except StratamemError as err:
        if err.code == ErrorCode.HOME_LOCKED:
            pid = err.details.get("pid", "unknown")
            print(_owned_message(home, pid, err.details.get("socket")), file=sys.stderr)
            return EXIT_OWNED
        raise
    from pathlib import Path

    from stratamem.core.telemetry.events_log import attach_event_log
    from stratamem.core.telemetry.logs import configure_logging
    from stratamem.core.telemetry.tracing import configure_tracing
    from stratamem.core.workspace.insight_scheduler import InsightScheduler

    configure_logging(home, core.config, embedded=False)
    configure_tracing(core.config)
    attach_event_log(core.bus)
    insights = InsightScheduler(
        lambda: [Path(r) for r in Section("workspace", core.config.get("workspace"))["roots"]],
        core.llm,
    )
    opts = ServeOptions(
        listen=list(args.listen),
        token=args.token,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        drain_s=float(args.drain_timeout),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    service = Service(core, opts)
    viewer = None
    try:
        try:
            await service.start()
            from stratamem.core.viewer.command import start_for_serve

            viewer = await start_for_serve(core, service, args.viewer, args.token)
        except StratamemError:
            await service.stop(0)
            raise
        if viewer is not None:
            service.viewer_url = viewer.url
            service._write_serve_json()
        # what start-up built (the engine, the hot index's rows) lives as long as the service: out
        # of the cyclic GC's reach, its full collections no longer walk it (the first one after
        # start paused a call for ~0.5 s at 10k traces; bench/results/grpc-overhead-session4.md)
        gc.freeze()
        info = {"socket": str(service.socket_path), "tcp": service.tcp_address}
        print(json.dumps({"ready": True, **info, "viewer_url": service.viewer_url}), flush=True)
        print(serve_banner(home, info, service.viewer_url), file=sys.stderr, flush=True)
        insights.start()
        idle_s = args.idle_exit
        if idle_s is None:
            idle_s = float(core.config["server"]["idle_exit_s"])
        idle = asyncio.create_task(exit_when_idle(service.activity, float(idle_s), stop))
        await stop.wait()
        idle.cancel()
        if viewer is not None:
            await viewer.stop()
        await insights.stop()
        await service.stop()
    finally:
        await core.shutdown()
    return 0


def serve_banner(home: Any, info: dict[str, Any], viewer_url: str | None) -> str:
    """What a person starting ``serve`` needs: where things live and how to stop it (stderr; the
    JSON line on stdout is for programs)."""
    import os

    lines = [
        f"{SERVE_READY_PREFIX} (pid {os.getpid()})",
        f"  home:    {home}",
        f"  data:    {home}/data",
        f"  logs:    {home}/logs",
        f"  socket:  {info['socket']}",
    ]
    if info.get("tcp"):
        lines.append(f"  tcp:     {info['tcp']}")
    if viewer_url:
        lines.append(f"  viewer:  {viewer_url}")
    lines.append(
        f"  stop:    Ctrl-C here, `stratamem stop --home {home}`, or `kill -TERM {os.getpid()}`"
        " (each finishes in-flight calls first)"
    )
    return "\n".join(lines)


def run_serve(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(serve(args))
    except StratamemError as err:
        print(f"{SERVE_PREFIX}{err}", file=sys.stderr)  # the client quotes this line
        return 2


def configure_health(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", default=argparse.SUPPRESS, help="runtime home to ask")


async def _health(args: argparse.Namespace) -> dict[str, Any]:
    from dataclasses import asdict

    from stratamem.core.commands.common import label, namespaces_with_memories, opened_core

    async with opened_core(args) as core:  # the home's service, started on demand
        health = await core.health()
        data = asdict(health)
        data["namespaces"] = [label(ns) for ns in await namespaces_with_memories(core, health)]
        return data


def health_lines(data: dict[str, Any]) -> list[str]:
    """``stratamem health`` on a terminal: one fact per line (``--json`` prints the object)."""
    llm, emb = data.get("llm") or {}, data.get("embedder") or {}

    def model(m: dict[str, Any]) -> str:
        if m.get("provider") in (None, "", "none"):
            return "none"
        state = "available" if m.get("available") else "unavailable"
        if m.get("last_error"):
            state += f", last error: {m['last_error']}"
        dim = f", {m['dimension']} dims" if m.get("dimension") else ""
        return f"{m['provider']} {m.get('model') or '-'}{dim} ({state})"

    counts = ", ".join(f"{k} {v}" for k, v in sorted((data.get("counts") or {}).items()))
    mode = data.get("mode", "")
    return [
        f"status:    {'ok' if data.get('ok') else 'UNHEALTHY'}",
        f"version:   {data.get('version', '')}",
        f"home:      {data.get('home', '')}",
        f"mode:      {mode}" + (f" ({data['mode_reason']})" if data.get("mode_reason") else ""),
        # the namespaces holding memories; the health record's own namespace is the service's
        # default (``unknown/default`` over the socket), which names nobody's memories
        f"namespaces: {', '.join(data.get('namespaces') or []) or 'none yet'}",
        f"embedder:  {model(emb)}",
        f"llm:       {model(llm)}",
        f"backlog:   {data.get('journal_backlog', 0)} journal entries not yet applied",
        f"memories:  {counts or 'none'}",
        f"uptime:    {int(data.get('uptime_ms', 0)) // 1000} s",
    ]


@reads_home
@through_service
def run_health(args: argparse.Namespace) -> int:
    """Print the core's health (readable, or JSON with ``--json``); exit 0 when healthy, else 1."""
    try:
        data = asyncio.run(_health(args))
    except StratamemError as err:
        print(f"stratamem health: unhealthy: {err}", file=sys.stderr)
        return 1
    if getattr(args, "json", False):
        print(json.dumps(data, default=str))
    else:
        print("\n".join(line for line in health_lines(data) if line))
    return 0 if data.get("ok") else 1


def configure_start(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--home", default=argparse.SUPPRESS, help="runtime home whose service to start"
    )
    parser.add_argument(
        "--budget", type=float, default=60.0, help="seconds to wait for it to answer (default 60)"
    )


def run_start(args: argparse.Namespace) -> int:
    """Make the home's service answer (starting it detached if nobody owns the home), print
    ``{"socket", "pid"}``: how plugins in other languages follow the thin clients' rules."""
    from stratamem.contract.hostkit.client import ensure_service, owner_record
    from stratamem.core.home import resolve_home

    home = resolve_home(getattr(args, "home", None))
    try:
        sock = ensure_service(home, args.budget)
    except StratamemError as err:
        print(f"stratamem start: error [{err.code.value}] {err.message}", file=sys.stderr)
        return 1
    owner = owner_record(home) or {}
    print(json.dumps({"socket": sock, "pid": owner.get("pid")}))
    return 0


def configure_stop(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--home", default=argparse.SUPPRESS, help="runtime home whose service to stop"
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for it to exit"
    )


def run_stop(args: argparse.Namespace) -> int:
    """SIGTERM the home's service (it drains and releases the home); 0 once the home is free."""
    from stratamem.contract.hostkit.client import stop_service
    from stratamem.core.home import resolve_home

    home = resolve_home(getattr(args, "home", None))
    try:
        pid = stop_service(home, args.timeout)
    except StratamemError as err:
        print(f"stratamem stop: error [{err.code.value}] {err.message}", file=sys.stderr)
        return 1
    print(
        f"stratamem stop: {'stopped process ' + str(pid) if pid else 'no service owns ' + str(home)}",
        file=sys.stderr,
    )
    return 0
