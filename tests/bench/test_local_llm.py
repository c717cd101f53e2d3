"""The bench-only local LLM helpers: the probe and the per-call timing the LoCoMo LLM rows report,
against the real loopback OpenAI-compatible stub (the model is the one paid part a test may script)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.llm_calls import TimedLlm, render, summarise, task_of
from bench.local_llm import command, probe, wait_ready

CORE_TESTS = str(Path(__file__).resolve().parents[2] / "packages" / "core" / "tests")


@pytest.fixture
def stub():  # type: ignore[no-untyped-def]
    sys.path.insert(0, CORE_TESTS)
    from stub_server import StubOpenAIServer

    with StubOpenAIServer(default_content=json.dumps({"queries": ["a", "b"]})) as server:
        yield server


def test_the_server_binds_loopback_only() -> None:
    cmd = command("/venv/bin/python", Path("m.gguf"), 9999)
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[1:3] == ["-m", "llama_cpp.server"]


def test_the_probe_asks_for_json_and_reports_latency_and_usage(stub) -> None:  # type: ignore[no-untyped-def]
    got = probe(stub.url)
    assert json.loads(got["text"]) == {"queries": ["a", "b"]}
    assert got["ms"] > 0 and got["usage"]["completion_tokens"] == 7
    sent = stub.requests[-1].json
    assert sent["response_format"] == {"type": "json_object"}


def test_waiting_for_a_server_that_exited_says_so() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait()
    with pytest.raises(RuntimeError, match="exited with 3"):
        wait_ready("http://127.0.0.1:9/v1", within_s=30, proc=proc)


def test_every_call_is_timed_by_task_with_its_outcome(stub) -> None:  # type: ignore[no-untyped-def]
    from stub_server import StubAnswer

    from stratamem.core.llm.openai_compatible import OpenAICompatibleLlm

    calls: list[dict] = []
    llm = TimedLlm(OpenAICompatibleLlm(stub.url, "stub", max_retries=0), calls)
    msgs = [
        {"role": "system", "content": "stratamem-task: retrieval.rewrite\nReply with JSON."},
        {"role": "user", "content": "Query: x"},
    ]
    stub.push("chat", StubAnswer(content="{}"), StubAnswer(content="{}", delay_s=3))

    async def go() -> None:
        await llm.complete(msgs, json_mode=True)
        with pytest.raises(Exception) as err:
            await llm.complete(msgs, json_mode=True, timeout_s=0.5)
        assert getattr(err.value, "code", None) is not None

    asyncio.run(go())
    assert [c["outcome"] for c in calls] == ["ok", "llm_timeout"]
    assert calls[0]["prompt_tokens"] == 11 and calls[0]["task"] == "retrieval.rewrite"
    s = summarise(calls)["retrieval.rewrite"]
    assert s["calls"] == 2 and s["outcomes"] == {"ok": 1, "llm_timeout": 1}
    assert s["prompt_tokens_median"] == 11
    assert s["ms"]["p95"] >= 400  # the timed-out call counts with the time it took
    assert "retrieval.rewrite" in "\n".join(render(summarise(calls)))
    assert task_of([{"role": "user", "content": "hi"}]) == "other"
