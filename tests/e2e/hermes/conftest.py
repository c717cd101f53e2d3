"""Fixtures for the real-Hermes end-to-end tests: a stub LLM on loopback and a prepared HERMES_HOME."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("run_agent", reason="needs the real hermes-agent (tox -e e2e)")

sys.path.insert(0, str(Path(__file__).parent))
from stub_llm import StubLLM

BIN = Path(sys.executable).parent


@pytest.fixture
def stub() -> Iterator[StubLLM]:
    server = StubLLM().start()
    yield server
    server.stop()


@pytest.fixture
def hermes_env(tmp_path: Path, stub: StubLLM) -> dict[str, str]:
    """HOME + HERMES_HOME in tmp, the three offline settings, and `stratamem hermes install` run."""
    home = tmp_path / "home"
    hh = home / ".hermes"
    hh.mkdir(parents=True)
    (hh / "config.yaml").write_text(
        "# written by the e2e test\n"
        "model:\n"
        "  provider: custom\n"
        f'  base_url: "{stub.base_url}"\n'
        "  default: fake-model\n"
        "  api_key: sk-stub-local\n"
        "  context_length: 131072\n"
        "security:\n"
        "  tirith_enabled: false\n"
        "  allow_lazy_installs: false\n"
    )
    version = subprocess.run(
        [sys.executable, "-c", "import importlib.metadata as m; print(m.version('hermes-agent'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (hh / ".update_check").write_text(
        json.dumps({"ts": int(time.time()), "behind": 0, "rev": None, "ver": version})
    )
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    for key in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL", "STRATAMEM_HOME"):
        env.pop(key, None)
    env.update(
        HOME=str(home),
        HERMES_HOME=str(hh),
        NO_PROXY="127.0.0.1,localhost",
        HERMES_DISABLE_LAZY_INSTALLS="1",
        TIRITH_ENABLED="false",
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    stratamem = shutil.which("stratamem", path=str(BIN)) or "stratamem"
    done = subprocess.run(
        [stratamem, "hermes", "install", "--hermes-home", str(hh)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "cwd").mkdir()
    env["_CWD"] = str(tmp_path / "cwd")
    return env
