"""A real Hermes agent remembers across sessions through Stratamem (AIAgent and `hermes chat -q`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
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
    """Each `hermes chat -q` is a short process and nobody runs `stratamem serve` by hand: the first
    process starts the home's resident service (detached), the next ones are its thin clients, and a
    fresh process recalls what an earlier one was told within its first turn."""
    from stratamem.contract.hostkit.client import owner_record, stop_service

    cwd = hermes_env.pop("_CWD")
    home = Path(hermes_env["HERMES_HOME"]) / "stratamem"
    assert owner_record(home) is None
    try:
        _chat_turns(stub, hermes_env, cwd, home)
    finally:
        stop_service(home)


def _chat_turns(stub: StubLLM, hermes_env: dict[str, str], cwd: str, home: Path) -> None:
    from stratamem.contract.hostkit.client import owner_record

    _, s1 = _hermes(hermes_env, cwd, FACT)
    assert s1
    owner = owner_record(home)
    assert owner is not None  # the service the first process started outlived it
    _, s2 = _hermes(hermes_env, cwd, QUESTION)  # a new process and session: no --resume
    assert s2 and s2 != s1
    assert owner_record(home) == owner  # joined the same service
    assert "teal" in _recall_in(_request_for(stub, QUESTION))
    _hermes(hermes_env, cwd, FOLLOW_UP, "--resume", s1)
    assert "teal" not in _recall_in(_request_for(stub, FOLLOW_UP))
