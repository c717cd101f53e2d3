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
    from stratamem.core.local import open_local_core

    ns = Namespace(agent_kind=AGENT)
    core = await open_local_core(home, embedder=load_embedder({}))
    try:
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
        return {k: v.as_dict() for k, v in s.summaries().items()}
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
    return {name: {k: v.as_dict() for k, v in s.summaries().items()} for name, s in samples.items()}


async def run_grpc(corpus: SyntheticCorpus, rows: int, n: int, warmup: int) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": rows, "query": QUERY}
    with tempfile.TemporaryDirectory(prefix="bench-grpc-") as tmp:
        home = Path(tmp)
        out["in_process"] = await _inprocess(home, corpus, rows, n, warmup)
        env = dict(os.environ, LANCEDB_LOG="error")
        cmd = _serve_cmd(home)
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        try:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
            info = json.loads(line)
            sock, tcp = info["socket"], info["tcp"]
            out.update(
                await _remote({"unix_socket": f"unix:{sock}", "tcp_loopback": tcp}, n, warmup)
            )
        finally:
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 30)
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    base = out["in_process"]["search"]
    out["overhead_ms"] = {
        name: {
            "p50": round(out[name]["search"]["median"] - base["median"], 3),
            "p95": round(out[name]["search"]["p95"] - base["p95"], 3),
        }
        for name in ("unix_socket", "tcp_loopback")
    }
    return out
