"""Serve a GGUF model OpenAI-compatibly on 127.0.0.1 for LoCoMo's LLM rows (``--llm-url``).

Bench only: the runtime (llama-cpp-python's server) lives in its own venv and the weights come from a
registry package; no package of the project depends on either. Steps: ``bench/llm_server.md``.

    python -m bench.local_llm --python /work/llmenv/venv/bin/python --model qwen.gguf --port 8765

starts the server, waits until it answers one JSON chat completion (the probe prints its latency),
then serves until interrupted; ``--check`` stops after the probe.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

PROBE = [
    {"role": "system", "content": 'Reply with only JSON {"queries": [up to 3 search queries]}.'},
    {"role": "user", "content": "Query: When did Caroline go to the LGBTQ support group?"},
]


def command(python: str, model: Path, port: int, *, threads: int = 2, ctx: int = 4096) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server on loopback (one model, ``n_ctx`` tokens)."""
    return [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(ctx),
        "--n_threads",
        str(threads),
    ]


def probe(url: str, *, model: str = "default", timeout_s: float = 120.0) -> dict[str, Any]:
    """One JSON-mode chat completion against ``url`` (the ``/v1`` base): its latency, text, usage."""
    body = {
        "model": model,
        "messages": PROBE,
        "temperature": 0.0,
        "max_tokens": 96,
        "response_format": {"type": "json_object"},
    }
    req = urllib.request.Request(
        url.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout_s) as res:
        data = json.loads(res.read())
    ms = (time.perf_counter() - t0) * 1000
    return {
        "ms": round(ms, 1),
        "text": data["choices"][0]["message"]["content"],
        "usage": data.get("usage") or {},
        "model": data.get("model", ""),
    }


def wait_ready(url: str, *, within_s: float, proc: subprocess.Popen[Any] | None = None) -> dict:
    """The first probe that answers; raises when ``within_s`` passes or the server exits."""
    end = time.monotonic() + within_s
    last: Exception | None = None
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            return probe(url, timeout_s=max(1.0, end - time.monotonic()))
        except (OSError, urllib.error.URLError) as exc:
            last = exc
            time.sleep(1.0)
    raise TimeoutError(f"no answer from {url} within {within_s:.0f} s ({last!r})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", required=True, help="the venv python that has llama-cpp-python")
    p.add_argument("--model", type=Path, required=True, help="a GGUF file")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--check", action="store_true", help="stop after the probe")
    args = p.parse_args(argv)
    if not args.model.is_file():
        p.error(f"no model file at {args.model}")
    url = f"http://127.0.0.1:{args.port}/v1"
    # ``kill`` of this process stops the server too (the ``finally`` below runs)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    proc = subprocess.Popen(
        command(args.python, args.model, args.port, threads=args.threads, ctx=args.ctx)
    )
    try:
        got = wait_ready(url, within_s=300, proc=proc)
        print(f"serving {args.model.name} at {url}; probe {got['ms']} ms: {got['text']!r}")
        print(f"usage {got['usage']}", flush=True)
        if not args.check:
            proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
