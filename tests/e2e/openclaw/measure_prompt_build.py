"""Measure what the plugin adds to an OpenClaw turn: ``before_prompt_build`` (and ``agent_end``)
round trips over the home's Unix socket to a real ``stratamem serve`` process, over 50 turns.

Usage: python tests/e2e/openclaw/measure_prompt_build.py [--turns 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from stratamem.core.server.sockets import socket_path_for
from stratamem.hosts.openclaw.v1 import openclaw_pb2 as pb
from stratamem.hosts.openclaw.v1 import openclaw_pb2_grpc as pb_grpc

TOPICS = [
    "deploy",
    "billing",
    "oncall",
    "backups",
    "latency",
    "search",
    "auth",
    "release",
    "docs",
    "cache",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def drive(sock: Path, turns: int) -> dict[str, float]:
    bpb: list[float] = []
    end: list[float] = []
    history: dict[str, list[dict[str, object]]] = {}
    async with grpc.aio.insecure_channel(f"unix:{sock}") as channel:
        stub = pb_grpc.OpenClawHostStub(channel)
        for i in range(turns):
            key = f"agent:main:s{i % 5}"
            ctx = pb.HookContext(
                run_id=f"run-{i}", agent_id="main", session_key=key, workspace_dir="/tmp/ws"
            )
            text = f"Note {i}: the {TOPICS[i % len(TOPICS)]} runbook lives in wiki page {1000 + i}."
            hist = history.setdefault(key, [])
            t = time.perf_counter()
            await stub.BeforePromptBuild(
                pb.BeforePromptBuildRequest(ctx=ctx, prompt=text, messages_json=json.dumps(hist)),
                timeout=15,
            )
            bpb.append((time.perf_counter() - t) * 1000)
            ts = int(time.time() * 1000)
            hist += [
                {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts},
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"Noted {i}."}],
                    "timestamp": ts + 1,
                },
            ]
            t = time.perf_counter()
            await stub.AgentEnd(
                pb.AgentEndRequest(ctx=ctx, messages_json=json.dumps(hist), success=True),
                timeout=30,
            )
            end.append((time.perf_counter() - t) * 1000)
    return {
        "turns": turns,
        "before_prompt_build_p50_ms": round(statistics.median(bpb), 1),
        "before_prompt_build_p95_ms": round(pct(bpb, 0.95), 1),
        "agent_end_p50_ms": round(statistics.median(end), 1),
        "agent_end_p95_ms": round(pct(end, 0.95), 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        exe = Path(sys.executable).parent / "stratamem"
        env = {**os.environ, "STRATAMEM_HOME": str(home)}
        proc = subprocess.Popen(
            [str(exe), "serve"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert proc.stdout is not None
            ready = json.loads(proc.stdout.readline())
            sock = Path(ready.get("socket") or socket_path_for(home))
            print(json.dumps(asyncio.run(drive(sock, args.turns))))
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
