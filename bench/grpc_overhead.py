"""gRPC overhead: the same ``search``, ``turn_start`` (and ``health``) in-process and against
``stratamem serve`` in its own process (as deployed) over the owner's Unix socket and TCP loopback;
overhead = remote minus in-process, p50 and p95.

Every call is interleaved: one home is built, copied, and opened at once in-process (in this
process) and by a served process, so each iteration runs in-process, Unix socket and TCP loopback
one after another (in a fresh random order, 2 ms apart) under the same machine load. The floor is measured in the same
iterations: a bare grpcio unary (its own process, grpc.aio on both ends like the service and
``RemoteCore``, no interceptor, no protobuf) whose request and reply have the sizes of the search
request and reply, over both transports: what any Python gRPC hop costs on this machine.

``python -m bench.grpc_overhead --profile DIR`` also samples the served process and this one with
py-spy during the loop and writes a flame summary of each.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.corpus import AGENT, SyntheticCorpus, load_store
from bench.stats import Samples, summarize, time_async

QUERY = "What did I say about my commute and the tram?"
#: the calls whose overhead is the target (``health`` is reported as the smallest call)
TARGET_CALLS = ("search", "turn_start")
TRANSPORTS = ("unix_socket", "tcp_loopback")
#: untimed pause after each call, so what a call leaves behind is not timed into the next one
SETTLE_S = 0.002

#: a grpcio aio server answering a fixed reply of argv[2] bytes (no interceptors, no protobuf)
_FLOOR_SERVER = r"""
import asyncio, json, sys
import grpc

async def main():
    reply = b"x" * int(sys.argv[2])
    async def unary(request, context):
        return reply
    handler = grpc.method_handlers_generic_handler(
        "bench.Floor", {"Unary": grpc.unary_unary_rpc_method_handler(unary)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port("unix:" + sys.argv[1])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(json.dumps({"pid": __import__("os").getpid(), "socket": sys.argv[1],
                      "tcp": f"127.0.0.1:{port}"}), flush=True)
    await server.wait_for_termination()

asyncio.run(main())
"""


def uptime() -> str:
    """``uptime``'s line (the load averages the figures were taken under)."""
    try:
        got = subprocess.run(["uptime"], capture_output=True, text=True, timeout=5, check=False)
        return got.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _serve_cmd(home: Path, fresh: bool = False) -> list[str]:
    exe = Path(sys.executable).parent / "stratamem"
    base = (
        [str(exe)]
        if exe.exists() and not fresh
        else [
            sys.executable,
            "-c",
            "import sys; from stratamem.core.cli import main; sys.exit(main())",
        ]
    )
    return [*base, "serve", "--home", str(home), "--listen", "127.0.0.1:0"]


async def _start(
    cmd: list[str], pythonpath: str | None = None
) -> tuple[asyncio.subprocess.Process, dict[str, Any]]:
    env = dict(os.environ, LANCEDB_LOG="error")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
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


def _telemetry_as_served(core: Any) -> None:
    """What ``stratamem serve`` sets up around its core (``server/command.py``), in this process."""
    from stratamem.core.telemetry.events_log import attach_event_log
    from stratamem.core.telemetry.logs import configure_logging
    from stratamem.core.telemetry.tracing import configure_tracing

    configure_logging(core.home, core.config, embedded=False)
    configure_tracing(core.config)
    attach_event_log(core.bus)


def _memory_dir() -> str | None:
    """The homes live in memory (``/dev/shm``) when there is one: a ``turn_start`` commits its
    route with an fsync whose disk tail (tens of ms on a shared disk, measured in the capture
    section) would drown a sub-millisecond difference; both sides use the same storage either way."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _pythonpath(tree: Path) -> str:
    """The package sources of a ``git archive`` tree, ahead of the installed ones."""
    return os.pathsep.join(sorted(str(p) for p in Path(tree).glob("packages/*/src")))


def _py_spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling ``pid`` (idle samples included: waiting on the poller shows) until stopped."""
    cmd = ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "250"]
    cmd += ["--idle", "--threads", "--nonblocking", "-o", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def flame_summary(raw: Path, top: int = 30) -> list[tuple[str, float, float]]:
    """[(frame, inclusive %, self %)] over every sample of py-spy's collapsed output."""
    incl: collections.Counter[str] = collections.Counter()
    self_: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = stack.split(";")
        c = int(count)
        total += c
        for f in set(frames):
            incl[f] += c
        self_[frames[-1]] += c
    rows = sorted(incl, key=lambda f: -incl[f])[:top]
    by_self = sorted(self_, key=lambda f: -self_[f])[:top]
    pct = 100 / max(total, 1)
    return [(f, incl[f] * pct, self_[f] * pct) for f in dict.fromkeys(rows + by_self)]


async def run_grpc(
    corpus: SyntheticCorpus,
    rows: int,
    n: int,
    warmup: int,
    rounds: int = 1,
    profile: Path | None = None,
    served_telemetry: bool = True,
    baseline: Path | None = None,
    seed: int = 7,
) -> dict[str, Any]:
    """``n`` interleaved iterations (after ``warmup``); ``rounds`` is kept for callers, unused.
    With ``profile`` (a directory), py-spy samples the served process and this one.

    ``served_telemetry``: the in-process core logs, traces and writes its event log exactly as
    ``stratamem serve`` does (files in its home), so that the two sides differ by the hop alone;
    without it the in-process side writes no log lines and the overhead includes the served
    process's perf and event lines. (OpenTelemetry's provider is process-wide and set once: later
    sections of the same bench process keep it; spans only record once an exporter is attached.)

    ``baseline``: a source tree of another commit (``git archive``); a second home copy is served
    by that commit's packages (same interpreter and dependencies) and called over both transports
    in the same iterations: a before/after of the service side in one run."""
    import grpc

    from stratamem.contract import codec
    from stratamem.contract.dtos import Namespace, RetrievalQuery, TurnInput
    from stratamem.contract.remote import BlockingRemoteCore, RemoteCore
    from stratamem.core.embedding import load_embedder
    from stratamem.core.engine.assemble import open_local_core

    ns = Namespace(agent_kind=AGENT)
    q = RetrievalQuery(agent=AGENT, query=QUERY, namespace=ns)
    out: dict[str, Any] = {
        "rows": rows,
        "query": QUERY,
        "iterations": n,
        "interleaved": True,
        "served_telemetry": served_telemetry,
        "homes_in_memory": _memory_dir() is not None,
        "uptime_start": uptime(),
    }
    samples: dict[str, Samples] = {}
    with tempfile.TemporaryDirectory(prefix="bench-grpc-", dir=_memory_dir()) as tmp:
        root = Path(tmp)
        await _build_home(root / "src", corpus, rows)
        for name in ("local", "served", *(("served-base",) if baseline else ())):
            shutil.copytree(root / "src", root / name)
        procs: list[asyncio.subprocess.Process] = []
        clients: dict[str, RemoteCore] = {}
        channels: list[grpc.aio.Channel] = []
        spies: list[subprocess.Popen[bytes]] = []
        based_pid = 0
        blocking: BlockingRemoteCore | None = None
        core = await open_local_core(root / "local", embedder=load_embedder({}))
        if served_telemetry:
            _telemetry_as_served(core)
        try:
            served, info = await _start(_serve_cmd(root / "served"))
            procs.append(served)
            clients = {
                "unix_socket": RemoteCore(f"unix:{info['socket']}"),
                "tcp_loopback": RemoteCore(info["tcp"]),
            }
            if baseline is not None:
                based, binfo = await _start(
                    _serve_cmd(root / "served-base", fresh=True), _pythonpath(baseline)
                )
                procs.append(based)
                based_pid = based.pid
                clients["unix_socket_baseline"] = RemoteCore(f"unix:{binfo['socket']}")
                clients["tcp_loopback_baseline"] = RemoteCore(binfo["tcp"])
            reply = codec.to_proto(await core.search(q)).ByteSize()
            request = codec.to_proto(q).ByteSize()
            floor, finfo = await _start(
                [sys.executable, "-c", _FLOOR_SERVER, str(root / "floor.sock"), str(reply)]
            )
            procs.append(floor)
            floors: dict[str, Callable[[], Awaitable[Any]]] = {}
            body = b"q" * request
            for name, target in (
                ("bare_grpc_unix", f"unix:{finfo['socket']}"),
                ("bare_grpc_tcp", finfo["tcp"]),
            ):
                ch = grpc.aio.insecure_channel(target)
                channels.append(ch)
                call = ch.unary_unary("/bench.Floor/Unary")
                floors[name] = lambda call=call: call(body, timeout=30)
            # one session per side and transport; a fresh turn key per call (as a host sends)
            turns = iter(range(10**9))

            def turn_call(side: str, fn: Callable[[TurnInput], Awaitable[Any]]) -> Any:
                def go() -> Awaitable[Any]:
                    i = next(turns)
                    return fn(
                        TurnInput(
                            agent=AGENT,
                            session_id=f"grpc-bench-{side}",
                            user_text=QUERY,
                            ts=int(time.time() * 1000),
                            namespace=ns,
                            turn_key=f"t{i}",
                        )
                    )

                return go

            calls: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
                ("in_process", "search", lambda: core.search(q)),
                ("in_process", "turn_start", turn_call("local", core.turn_start)),
                ("in_process", "health", core.health),
            ]
            for name, rc in clients.items():
                calls += [
                    (name, "search", lambda rc=rc: rc.search(q)),
                    (name, "turn_start", turn_call(name, rc.turn_start)),
                    (name, "health", rc.health),
                ]
            # a threaded host's client (Hermes): the blocking facade, called from this thread
            blocking = BlockingRemoteCore(f"unix:{info['socket']}")

            async def blocking_turn(turn: TurnInput) -> Any:
                return blocking.turn_start(turn)

            async def blocking_search() -> Any:
                return blocking.search(q)

            async def blocking_health() -> Any:
                return blocking.health()

            calls += [
                ("unix_socket_blocking", "search", blocking_search),
                ("unix_socket_blocking", "turn_start", turn_call("blocking", blocking_turn)),
                ("unix_socket_blocking", "health", blocking_health),
            ]
            calls += [(name, "unary", fn) for name, fn in floors.items()]
            samples = {name: Samples() for name, _, _ in calls}
            order = random.Random(seed)
            for i in range(warmup + n):
                if profile is not None and i == warmup:
                    spies = [
                        _py_spy(served.pid, profile / "server.raw"),
                        _py_spy(os.getpid(), profile / "client.raw"),
                    ]
                    if baseline is not None:
                        spies.append(_py_spy(based_pid, profile / "server-baseline.raw"))
                    await asyncio.sleep(1.0)  # py-spy attached before the timed calls
                # a fresh order each iteration: a call that leaves work behind (a turn_start's
                # events and log lines) slows whichever call comes next, so no call may always
                # follow the same one (a fixed rotation did: over the socket, search always came
                # after the in-process turn_start and read +2 ms slower than over TCP)
                order.shuffle(calls)
                for name, call_name, fn in calls:
                    ms, _ = await time_async(fn)
                    if i >= warmup:
                        samples[name].add(call_name, ms)
                    await asyncio.sleep(SETTLE_S)  # as between a host's calls: leftovers finish
        finally:
            for spy in spies:
                spy.send_signal(signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    spy.wait(30)
            for rc in clients.values():
                await rc.shutdown()
            if blocking is not None:
                blocking.close()
            for ch in channels:
                await ch.close()
            for proc in procs:
                await _stop(proc)
            await core.shutdown()
            if served_telemetry:
                from stratamem.core.telemetry.logs import reset_logging

                reset_logging()
    for name, s in samples.items():
        out[name] = {call: summarize(v).as_dict() for call, v in s.data.items()}
    out["reply_bytes"] = reply
    out["request_bytes"] = request
    base = out["in_process"]
    out["overhead_ms"] = {
        name: {
            call: {
                "p50": round(out[name][call]["median"] - base[call]["median"], 3),
                "p95": round(out[name][call]["p95"] - base[call]["p95"], 3),
            }
            for call in (*TARGET_CALLS, "health")
        }
        for name in (*clients, "unix_socket_blocking")
    }
    out["bare_grpc_ms"] = {
        "unix_socket": out.pop("bare_grpc_unix")["unary"],
        "tcp_loopback": out.pop("bare_grpc_tcp")["unary"],
    }
    # what the service adds beyond one bare grpcio call: overhead minus the floor, p50 and p95
    out["beyond_floor_ms"] = {
        name: {
            call: {
                "p50": round(
                    out["overhead_ms"][name][call]["p50"]
                    - out["bare_grpc_ms"][_floor(name)]["median"],
                    3,
                ),
                "p95": round(
                    out["overhead_ms"][name][call]["p95"]
                    - out["bare_grpc_ms"][_floor(name)]["p95"],
                    3,
                ),
            }
            for call in (*TARGET_CALLS, "health")
        }
        for name in (*clients, "unix_socket_blocking")
    }
    out["uptime_end"] = uptime()
    return out


def _floor(name: str) -> str:
    return name.removesuffix("_baseline").removesuffix("_blocking")


def _table(res: dict[str, Any]) -> list[str]:
    def cell(d: dict[str, Any]) -> str:
        return f"{d['median']:.2f} / {d['p95']:.2f} ({d['min']:.2f})"

    lines = [
        "| transport | search | turn_start | health | overhead p50 / p95: search | turn_start "
        "| health |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in (
        "in_process",
        *TRANSPORTS,
        "unix_socket_blocking",
        *(f"{t}_baseline" for t in TRANSPORTS),
    ):
        if name not in res:
            continue
        row = [name.replace("_", " ")] + [cell(res[name][c]) for c in (*TARGET_CALLS, "health")]
        for c in (*TARGET_CALLS, "health"):
            o = res["overhead_ms"].get(name, {}).get(c)
            row.append("–" if o is None else f"{o['p50']:+.2f} / {o['p95']:+.2f}")
        lines.append("| " + " | ".join(row) + " |")
    for name in TRANSPORTS:
        lines.append(
            f"| bare grpcio unary, {name.replace('_', ' ')} | {cell(res['bare_grpc_ms'][name])} "
            "| – | – | – | – | – |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Stand-alone run (and profile) of this section: prints the table, writes JSON/flame files."""
    from bench.corpus import build_corpus
    from stratamem.core.embedding import load_embedder

    p = argparse.ArgumentParser(prog="python -m bench.grpc_overhead", description=__doc__)
    p.add_argument("--rows", type=int, default=2_000)
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--profile", type=Path, help="directory for py-spy raw output and summaries")
    p.add_argument("--json", type=Path, help="write the figures here")
    p.add_argument("--baseline", type=Path, help="source tree of the commit to compare against")
    p.add_argument(
        "--no-served-telemetry",
        action="store_true",
        help="the in-process core writes no log lines (the served one does)",
    )
    args = p.parse_args(argv)
    os.environ.setdefault("LANCEDB_LOG", "error")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    corpus = build_corpus(load_embedder({"cache": {"enabled": False}}), args.seed)
    res = asyncio.run(
        run_grpc(
            corpus,
            args.rows,
            args.n,
            args.warmup,
            profile=args.profile,
            served_telemetry=not args.no_served_telemetry,
            baseline=args.baseline,
            seed=args.seed,
        )
    )
    print(res["uptime_start"])
    print("\n".join(_table(res)))
    print(res["uptime_end"])
    if args.json:
        args.json.write_text(json.dumps(res, indent=2), encoding="utf-8")
    if args.profile:
        for side in ("server", "server-baseline", "client"):
            raw = args.profile / f"{side}.raw"
            if raw.exists():
                md = ["| frame | inclusive | self |", "|---|---|---|"]
                md += [f"| `{f[:120]}` | {i:.1f}% | {s:.1f}% |" for f, i, s in flame_summary(raw)]
                (args.profile / f"{side}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
