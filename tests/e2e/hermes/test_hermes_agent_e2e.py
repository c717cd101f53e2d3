"""A real Hermes agent remembers across sessions through Stratamem (AIAgent and `hermes chat -q`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from stub_llm import StubLLM, last_user_text

HERE = Path(__file__).parent
FACT = "My favourite colour is teal, remember that please."
QUESTION = "Which colour do I like best?"
FOLLOW_UP = "Thanks. Which colour do I like best, again?"
FENCE = re.compile(r"<memory-context>(.*?)</memory-context>", re.S)


def _recall_in(request: dict[str, Any]) -> str:
    """The <memory-context> block Hermes attached to the CURRENT user message ("" if none)."""
    found = FENCE.findall(last_user_text(request))
    return "\n".join(found)


def _request_for(stub: StubLLM, text: str) -> dict[str, Any]:
    hits = [r for r in stub.chat_requests() if last_user_text(r).startswith(text)]
    assert hits, f"the stub never saw a turn starting with {text!r}"
    return hits[0]


def test_agent_recalls_a_fact_from_an_earlier_session_but_not_from_its_own_history(
    stub: StubLLM, hermes_env: dict[str, str]
) -> None:
    cwd = hermes_env.pop("_CWD")
    done = subprocess.run(
        [sys.executable, str(HERE / "drive_agent.py"), FACT, QUESTION, FOLLOW_UP],
        env=hermes_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-12000:]
    ids = json.loads(done.stdout.strip().splitlines()[-1])
    assert ids["s1"] != ids["s2"] and ids["s3"] == ids["s1"]

    first = _request_for(stub, FACT)
    assert _recall_in(first) == ""  # nothing stored yet
    second = _request_for(stub, QUESTION)
    recall = _recall_in(second)
    assert "teal" in recall, last_user_text(second)
    resumed = _request_for(stub, FOLLOW_UP)
    assert "teal" not in _recall_in(resumed)  # its own history already shows the fact
    assert any(FACT in last_user_text({"messages": [m]}) for m in resumed["messages"])


def _hermes(env: dict[str, str], cwd: str, prompt: str, *extra: str) -> tuple[str, str]:
    hermes = str(Path(sys.executable).parent / "hermes")
    done = subprocess.run(
        [hermes, "chat", "-Q", "-q", prompt, *extra],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    sid = re.search(r"session_id:\s*(\S+)", done.stderr + done.stdout)
    return done.stdout, sid.group(1) if sid else ""


def test_hermes_chat_cli_recalls_across_processes_and_sessions(
    stub: StubLLM, hermes_env: dict[str, str]
) -> None:
    """Each `hermes chat` is a short process: with `stratamem serve` on the home (as the README
    recommends) every one is a client of that server instead of loading the model itself."""
    cwd = hermes_env.pop("_CWD")
    home = Path(hermes_env["HERMES_HOME"]) / "stratamem"
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "stratamem"),
            "serve",
            "--home",
            str(home),
            "--viewer",
            "off",
        ],
        env=hermes_env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not (home / "run" / "stratamem.sock").exists():
            assert server.poll() is None, "stratamem serve exited"
            assert time.monotonic() < deadline, "stratamem serve did not come up"
            time.sleep(0.1)
        _chat_turns(stub, hermes_env, cwd)
    finally:
        server.terminate()
        server.wait(30)


def _chat_turns(stub: StubLLM, hermes_env: dict[str, str], cwd: str) -> None:
    _, s1 = _hermes(hermes_env, cwd, FACT)
    assert s1
    _, s2 = _hermes(hermes_env, cwd, QUESTION)  # a new session: no --resume
    assert s2 and s2 != s1
    assert "teal" in _recall_in(_request_for(stub, QUESTION))
    _hermes(hermes_env, cwd, FOLLOW_UP, "--resume", s1)
    assert "teal" not in _recall_in(_request_for(stub, FOLLOW_UP))
