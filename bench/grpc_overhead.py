"""gRPC overhead: the same ``search`` (and ``health``) in-process and against ``stratamem serve`` in
its own process (as deployed) over the owner's Unix socket and TCP loopback; overhead = remote minus
in-process, p50 and p95.

Every call is interleaved: one home is built, copied twice, and opened at once in-process (in this
process) and by a served process, so each iteration runs in-process, Unix socket and TCP loopback
back to back (in a rotating order) under the same machine load. Two floors are measured in the same
iterations: a bare grpcio unary echo (its own process, no interceptor, the size of a search reply)
over both transports, the transport's own cost; and a second served copy with its file logs off
(``logging.file: false``), what the service's log lines cost on the wire path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.corpus import AGENT, SyntheticCorpus, load_store
from bench.stats import Samples, summarize, time_async

QUERY = "What did I say about my commute and the tram?"

#: a grpcio aio server echoing raw bytes (no interceptors, no protobuf): the transport's floor
_ECHO_SERVER = r"""
import asyncio, json, sys
import grpc

async def main():
    async def echo(request, context):
        return request
    handler = grpc.method_handlers_generic_handler(
        "bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port("unix:" + sys.argv[1])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(json.dumps({"socket": sys.argv[1], "tcp": f"127.0.0.1:{port}"}), flush=True)
    await server.wait_for_termination()

asyncio.run(main())
"""


def _serve_cmd(home: Path) -> list[str]:
    exe = Path(sys.executable).parent / "stratamem"
    base = (
        [str(exe)]
        if exe.exists()
        else [
            sys.executable,
            "-c",
            "import sys; from stratamem.core.cli import main; sys.exit(main())",
        ]
    )
    return [*base, "serve", "--home", str(home), "--listen", "127.0.0.1:0"]


async def _start(cmd: list[str]) -> tuple[asyncio.subprocess.Process, dict[str, Any]]:
    env = dict(os.environ, LANCEDB_LOG="error")
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdout is not None
    info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 180))
    return proc, info


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), 30)
    if proc.returncode is None:
        proc.kill()
        await proc.wait()


async def _build_home(home: Path, corpus: SyntheticCorpus, rows: int) -> None:
    from stratamem.core.embedding import load_embedder
    from stratamem.core.engine.assemble import open_local_core

    core = await open_local_core(home, embedder=load_embedder({}))
    try:
        await load_store(core.store, corpus, rows)
        await core.store.ensure_fts("traces")
        await core.store.optimize()
    finally:
        await core.shutdown()


def _without_file_logs(home: Path) -> None:
    """The second served copy writes no log files (A/B of the service's log lines)."""
    cfg = home / "config.yaml"
    text = cfg.read_text() if cfg.exists() else ""
    cfg.write_text(text + "\nlogging:\n  file: false\n")


async def run_grpc(
    corpus: SyntheticCorpus, rows: int, n: int, warmup: int, rounds: int = 1
) -> dict[str, Any]:
    """``n`` interleaved iterations (after ``warmup``); ``rounds`` is kept for callers, unused."""
    import grpc

    from stratamem.contract import codec
    from stratamem.contract.dtos import Namespace, RetrievalQuery
    from stratamem.contract.remote import RemoteCore
    from stratamem.core.embedding import load_embedder
    from stratamem.core.engine.assemble import open_local_core

    ns = Namespace(agent_kind=AGENT)
    q = RetrievalQuery(agent=AGENT, query=QUERY, namespace=ns)
    out: dict[str, Any] = {"rows": rows, "query": QUERY, "iterations": n, "interleaved": True}
    with tempfile.TemporaryDirectory(prefix="bench-grpc-") as tmp:
        root = Path(tmp)
        await _build_home(root / "src", corpus, rows)
        for name in ("local", "served", "served-nologs"):
            shutil.copytree(root / "src", root / name)
        _without_file_logs(root / "served-nologs")
        procs: list[asyncio.subprocess.Process] = []
        clients: dict[str, RemoteCore] = {}
        channels: list[grpc.aio.Channel] = []
        core = await open_local_core(root / "local", embedder=load_embedder({}))
        try:
            served, info = await _start(_serve_cmd(root / "served"))
            procs.append(served)
            quiet, qinfo = await _start(_serve_cmd(root / "served-nologs"))
            procs.append(quiet)
            echo, einfo = await _start(
                [sys.executable, "-c", _ECHO_SERVER, str(root / "echo.sock")]
            )
            procs.append(echo)
            clients = {
                "unix_socket": RemoteCore(f"unix:{info['socket']}"),
                "tcp_loopback": RemoteCore(info["tcp"]),
                "unix_socket_no_file_logs": RemoteCore(f"unix:{qinfo['socket']}"),
            }
            reply = codec.to_proto(await core.search(q)).ByteSize()
            payload = b"x" * reply
            echoes: dict[str, Callable[[], Awaitable[Any]]] = {}
            for name, target in (
                ("bare_grpc_unix", f"unix:{einfo['socket']}"),
                ("bare_grpc_tcp", einfo["tcp"]),
            ):
                ch = grpc.aio.insecure_channel(target)
                channels.append(ch)
                call = ch.unary_unary("/bench.Echo/Echo")
                echoes[name] = lambda call=call: call(payload, timeout=30)
            calls: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
                ("in_process", "search", lambda: core.search(q)),
                ("in_process", "health", core.health),
            ]
            for name, rc in clients.items():
                calls += [(name, "search", lambda rc=rc: rc.search(q)), (name, "health", rc.health)]
            calls += [(name, "echo", fn) for name, fn in echoes.items()]
            samples = {name: Samples() for name, _, _ in calls}
            for i in range(warmup + n):
                k = i % len(calls)  # rotate the order so no transport always goes first
                for name, call_name, fn in calls[k:] + calls[:k]:
                    ms, _ = await time_async(fn)
                    if i >= warmup:
                        samples[name].add(call_name, ms)
        finally:
            for rc in clients.values():
                await rc.shutdown()
            for ch in channels:
                await ch.close()
            for proc in procs:
                await _stop(proc)
            await core.shutdown()
    for name, s in samples.items():
        out[name] = {call: summarize(v).as_dict() for call, v in s.data.items()}
    out["reply_bytes"] = reply
    base = out["in_process"]
    out["overhead_ms"] = {
        name: {
            call: {
                "p50": round(out[name][call]["median"] - base[call]["median"], 3),
                "p95": round(out[name][call]["p95"] - base[call]["p95"], 3),
            }
            for call in ("search", "health")
        }
        for name in clients
    }
    out["bare_grpc_ms"] = {
        "unix_socket": out.pop("bare_grpc_unix")["echo"],
        "tcp_loopback": out.pop("bare_grpc_tcp")["echo"],
    }
    return out
