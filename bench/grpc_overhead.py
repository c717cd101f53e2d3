"""gRPC overhead: the same ``search`` in-process, over the owner's Unix socket and over TCP loopback
(``stratamem serve`` in its own process, as deployed); overhead = remote minus in-process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.corpus import AGENT, SyntheticCorpus, load_store
from bench.stats import Samples, time_async

QUERY = "What did I say about my commute and the tram?"


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


async def _inprocess(
    home: Path, corpus: SyntheticCorpus, rows: int, n: int, warmup: int
) -> dict[str, Any]:
    from stratamem.contract.dtos import Namespace, RetrievalQuery
    from stratamem.core.embedding import load_embedder
    from stratamem.core.engine.assemble import open_local_core

    ns = Namespace(agent_kind=AGENT)
    core = await open_local_core(home, embedder=load_embedder({}))
    try:
        if rows:
            await load_store(core.store, corpus, rows)
            await core.store.ensure_fts("traces")
            await core.store.optimize()
        q = RetrievalQuery(agent=AGENT, query=QUERY, namespace=ns)
        s = Samples()
        for i in range(warmup + n):
            ms, _ = await time_async(lambda: core.search(q))
            ms2, _ = await time_async(core.health)
            if i >= warmup:
                s.add("search", ms)
                s.add("health", ms2)
        return dict(s.data)
    finally:
        await core.shutdown()


async def _remote(targets: dict[str, str], n: int, warmup: int) -> dict[str, Any]:
    """Each transport in turn per iteration, so machine noise hits them alike."""
    from stratamem.contract.dtos import Namespace, RetrievalQuery
    from stratamem.contract.remote import RemoteCore

    ns = Namespace(agent_kind=AGENT)
    q = RetrievalQuery(agent=AGENT, query=QUERY, namespace=ns)
    samples = {name: Samples() for name in targets}
    clients = {name: RemoteCore(t) for name, t in targets.items()}
    try:
        for i in range(warmup + n):
            for name, rc in clients.items():
                ms, _ = await time_async(lambda rc=rc: rc.search(q))
                ms2, _ = await time_async(rc.health)
                if i >= warmup:
                    samples[name].add("search", ms)
                    samples[name].add("health", ms2)
    finally:
        for rc in clients.values():
            await rc.shutdown()
    return {name: dict(s.data) for name, s in samples.items()}


async def _serve_round(home: Path, n: int, warmup: int) -> dict[str, Any]:
    env = dict(os.environ, LANCEDB_LOG="error")
    proc = await asyncio.create_subprocess_exec(
        *_serve_cmd(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        assert proc.stdout is not None
        info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 120))
        targets = {"unix_socket": f"unix:{info['socket']}", "tcp_loopback": info["tcp"]}
        return await _remote(targets, n, warmup)
    finally:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 30)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def _merge(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    from bench.stats import summarize

    out: dict[str, Any] = {}
    for name in rounds[0]:
        out[name] = {
            call: summarize([x for r in rounds for x in r[name][call]]).as_dict()
            for call in rounds[0][name]
        }
    return out


async def run_grpc(
    corpus: SyntheticCorpus, rows: int, n: int, warmup: int, rounds: int = 3
) -> dict[str, Any]:
    """``rounds`` alternating blocks (in-process, then served) so load drift hits both sides."""
    out: dict[str, Any] = {"rows": rows, "query": QUERY, "rounds": rounds}
    per = max(1, n // rounds)
    local_rounds: list[dict[str, Any]] = []
    remote_rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-grpc-") as tmp:
        home = Path(tmp)
        for i in range(rounds):
            local_rounds.append(await _inprocess(home, corpus, rows if i == 0 else 0, per, warmup))
            remote_rounds.append(await _serve_round(home, per, warmup))
    out["in_process"] = _merge([{"in_process": r} for r in local_rounds])["in_process"]
    out.update(_merge(remote_rounds))
    base = out["in_process"]
    out["overhead_ms"] = {
        name: {
            call: {
                "p50": round(out[name][call]["median"] - base[call]["median"], 3),
                "p95": round(out[name][call]["p95"] - base[call]["p95"], 3),
            }
            for call in ("search", "health")
        }
        for name in ("unix_socket", "tcp_loopback")
    }
    return out
