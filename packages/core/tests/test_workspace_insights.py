"""Insight extraction and its schedule: null vs "" reads, prompt/parse/merge, trigger gate, cron,
and the scheduler with an injected clock against an OpenAI-compatible HTTP stub (the only stand-in).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace.cron import parse_cron
from stratamem.core.workspace.insight_scheduler import InsightScheduler
from stratamem.core.workspace.insights import (
    INSIGHT_CATEGORIES,
    MIN_INSIGHT_GROWTH_CHARS,
    MemoryInsight,
    build_insight_extraction_prompt,
    get_default_insights_template,
    merge_insights,
    parse_insight_extraction_response,
    read_insights_memory,
    read_working_memory,
    run_insight_extraction,
    should_trigger_extraction,
    write_insights_memory,
)
from stratamem.core.workspace.layered import write_memory_file
from stratamem.core.workspace.settings import update_settings

DAY_MS = 86_400_000


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "project"
    r.mkdir()
    return r.resolve()


# -- an OpenAI-compatible HTTP stub and a minimal client for it ---------------------------------


class StubLlmServer:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                payload = json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": outer.reply}}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class OpenAiCompatibleClient:
    """Talks HTTP to the stub exactly as to a real endpoint."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    async def complete(self, messages: list[dict[str, str]], json_mode: bool = False) -> Any:
        body: dict[str, Any] = {"model": "stub", "messages": messages}
        if json_mode:
            body["response_format"] = {"type": "json_object"}

        def post() -> Any:
            req = urllib.request.Request(
                f"{self.base_url}/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read())

        data = await asyncio.to_thread(post)
        return SimpleNamespace(text=data["choices"][0]["message"]["content"])


REPLY = json.dumps(
    {
        "summary": "Two durable lessons.",
        "insights": [
            {"category": "pitfall", "content": "Never run migrations twice.", "source": "Pitfalls"},
            {"category": "convention", "content": "Use uv for every command."},
            {"category": "gossip", "content": "ignored: unknown category"},
        ],
    }
)


@pytest.fixture
def llm() -> Iterator[tuple[StubLlmServer, OpenAiCompatibleClient]]:
    server = StubLlmServer(REPLY)
    yield server, OpenAiCompatibleClient(server.url)
    server.close()


# -- file semantics ------------------------------------------------------------------------------


def test_missing_insights_read_as_none_and_missing_working_memory_as_empty(root: Path) -> None:
    assert read_insights_memory(root) is None
    assert read_working_memory(root) == ""


def test_writing_insights_creates_the_workspace_and_file(root: Path) -> None:
    write_insights_memory(root, "# Memory Insights\n")
    assert (root / ".stratamem/memory/memory-insights.md").read_text(
        encoding="utf-8"
    ) == "# Memory Insights\n"
    assert read_insights_memory(root) == "# Memory Insights\n"


# -- prompt, parser, merge -----------------------------------------------------------------------


def test_prompt_contains_working_memory_existing_insights_and_categories() -> None:
    prompt = build_insight_extraction_prompt("WORKING TEXT", "EXISTING TEXT")
    assert "WORKING TEXT" in prompt and "EXISTING TEXT" in prompt
    for cat in INSIGHT_CATEGORIES:
        assert cat in prompt
    assert "(none)" in build_insight_extraction_prompt("w", None)


def test_categories_are_the_five_of_the_contract() -> None:
    assert INSIGHT_CATEGORIES == ("pattern", "principle", "convention", "pitfall", "context")


def test_parser_accepts_fenced_json_and_drops_unknown_categories() -> None:
    result = parse_insight_extraction_response(f"```json\n{REPLY}\n```")
    assert [(i.category, i.content) for i in result.insights] == [
        ("pitfall", "Never run migrations twice."),
        ("convention", "Use uv for every command."),
    ]
    assert result.summary == "Two durable lessons." and result.extracted_at


@pytest.mark.parametrize("bad", ["", "not json", "[1, 2]", '{"insights": "nope"}'])
def test_parser_rejects_malformed_output_with_a_typed_error(bad: str) -> None:
    with pytest.raises(StratamemError) as err:
        parse_insight_extraction_response(bad)
    assert err.value.code == ErrorCode.LLM_OUTPUT_MALFORMED


def test_merge_places_insights_under_category_headings_and_dedupes() -> None:
    first = merge_insights(None, [MemoryInsight("pitfall", "Never run migrations twice.")])
    assert first.startswith(get_default_insights_template().split("\n")[0])
    assert "## Pitfalls\n- Never run migrations twice." in first
    again = merge_insights(
        first,
        [
            MemoryInsight("pitfall", "never run  migrations twice"),
            MemoryInsight("context", "The API is internal only."),
        ],
    )
    assert again.count("igrations twice") == 1
    assert "## Context\n- The API is internal only." in again


# -- trigger gate and cron -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("last_run", "size", "last_size", "now", "expected"),
    [
        (None, 1000, 0, 0, True),
        (None, 999, 0, 0, False),
        (0, 5000, 0, DAY_MS - 1, False),  # grew, but too soon
        (0, 1500, 1000, DAY_MS, False),  # due, but grew only 500
        (0, 2000, 1000, DAY_MS, True),  # both
    ],
)
def test_should_trigger_needs_interval_and_growth(
    last_run: int | None, size: int, last_size: int, now: int, expected: bool
) -> None:
    assert MIN_INSIGHT_GROWTH_CHARS == 1000
    assert should_trigger_extraction(last_run, {}, size, last_size, now) is expected


def test_custom_min_interval_is_honoured() -> None:
    s = {"insight_extraction_min_interval_ms": 1000}
    assert should_trigger_extraction(0, s, 5000, 0, 1000)
    assert not should_trigger_extraction(0, s, 5000, 0, 999)


def test_default_schedule_fires_daily_at_two() -> None:
    cron = parse_cron("0 2 * * *")
    assert cron.matches(dt.datetime(2026, 3, 1, 2, 0))
    assert not cron.matches(dt.datetime(2026, 3, 1, 2, 1))
    assert cron.next_after(dt.datetime(2026, 3, 1, 2, 0)) == dt.datetime(2026, 3, 2, 2, 0)


def test_cron_steps_ranges_lists_and_weekdays() -> None:
    cron = parse_cron("*/15 9-17 * * 1-5")
    assert cron.matches(dt.datetime(2026, 3, 2, 9, 45))  # Monday
    assert not cron.matches(dt.datetime(2026, 3, 1, 9, 45))  # Sunday
    assert parse_cron("0 0 1,15 * *").matches(dt.datetime(2026, 1, 15))
    assert parse_cron("0 0 * * 7").matches(dt.datetime(2026, 3, 1))  # 7 is Sunday too


def test_cron_follows_debian_cron_names_and_last_day() -> None:
    assert parse_cron("30 6 * * MON-FRI").matches(dt.datetime(2026, 3, 2, 6, 30))  # Monday
    assert not parse_cron("30 6 * * MON-FRI").matches(dt.datetime(2026, 3, 1, 6, 30))  # Sunday
    month_end = parse_cron("0 23 L * *")
    assert month_end.next_after(dt.datetime(2026, 2, 1)) == dt.datetime(2026, 2, 28, 23, 0)
    aware = dt.datetime(2026, 3, 1, 2, 0, 30, tzinfo=dt.UTC)
    assert parse_cron("0 2 * * *").matches(aware)
    assert parse_cron("0 2 * * *").next_after(aware) == dt.datetime(2026, 3, 2, 2, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "* * * *",
        "60 * * * *",
        "* 24 * * *",
        "a b c d e",
        "*/0 * * * *",
        "5-1 * * * *",
        "0 0 30 2 *",
        "0 * * * * *",
    ],
)
def test_bad_cron_expressions_are_invalid_argument(bad: str) -> None:
    with pytest.raises(StratamemError) as err:
        parse_cron(bad)
    assert err.value.code == ErrorCode.INVALID_ARGUMENT


# -- extraction runs ------------------------------------------------------------------------------


async def test_without_an_llm_provider_extraction_is_skipped_not_faked(root: Path) -> None:
    write_memory_file(root, "MEMORY.md", "x" * 5000)
    outcome = await run_insight_extraction(root, None, {})
    assert (outcome.status, outcome.reason) == ("skipped", "no_llm_provider")
    assert read_insights_memory(root) is None


async def test_extraction_writes_insights_and_audit_through_the_llm(root: Path, llm: Any) -> None:
    server, client = llm
    write_memory_file(root, "MEMORY.md", "## Pitfalls\n" + "we ran migrations twice once. " * 60)
    outcome = await run_insight_extraction(root, client, {})
    assert outcome.status == "extracted" and outcome.added == 2
    assert server.requests[0]["response_format"] == {"type": "json_object"}
    assert "we ran migrations twice" in server.requests[0]["messages"][1]["content"]
    insights = read_insights_memory(root)
    assert insights is not None and "- Never run migrations twice." in insights
    audit = (root / ".stratamem/memory/memory-audit.md").read_text(encoding="utf-8")
    assert "extracted 2 insight(s), 2 new" in audit
    # no growth since: the gate holds even though the LLM is there
    again = await run_insight_extraction(root, client, {"insight_extraction_min_interval_ms": 0})
    assert (again.status, again.reason) == ("skipped", "threshold_not_met")
    assert len(server.requests) == 1


async def test_malformed_llm_output_fails_the_run_and_leaves_insights_untouched(root: Path) -> None:
    server = StubLlmServer("this is not json")
    try:
        write_memory_file(root, "MEMORY.md", "y" * 2000)
        outcome = await run_insight_extraction(root, OpenAiCompatibleClient(server.url), {})
    finally:
        server.close()
    assert outcome.status == "failed"
    assert read_insights_memory(root) is None
    assert "failed" in (root / ".stratamem/memory/memory-audit.md").read_text(encoding="utf-8")


# -- the scheduler --------------------------------------------------------------------------------


async def test_scheduler_is_disabled_by_default_and_resyncs_when_settings_change(
    root: Path, llm: Any
) -> None:
    server, client = llm
    write_memory_file(root, "MEMORY.md", "z " * 1000)
    scheduler = InsightScheduler([root], client, clock=lambda: dt.datetime(2026, 3, 1, 2, 0))
    assert scheduler.resync() == {}
    assert await scheduler.tick(dt.datetime(2026, 3, 1, 2, 0)) == []
    update_settings(root, {"insight_extraction_enabled": True})
    ran = await scheduler.tick(dt.datetime(2026, 3, 2, 2, 0))
    assert [o.status for _, o in ran] == ["extracted"]
    assert root in scheduler.schedules
    update_settings(root, {"insight_extraction_schedule": "30 4 * * *"})
    write_memory_file(root, "MEMORY.md", "z " * 3000)
    assert await scheduler.tick(dt.datetime(2026, 3, 5, 2, 0)) == []
    ran = await scheduler.tick(dt.datetime(2026, 3, 5, 4, 30))
    assert [o.status for _, o in ran] == ["extracted"]
    update_settings(root, {"insight_extraction_enabled": False})
    assert await scheduler.tick(dt.datetime(2026, 3, 9, 4, 30)) == []
    assert len(server.requests) == 2


async def test_scheduler_fires_once_per_matching_minute(root: Path, llm: Any) -> None:
    _, client = llm
    update_settings(root, {"insight_extraction_enabled": True})
    write_memory_file(root, "MEMORY.md", "w " * 1000)
    scheduler = InsightScheduler([root], client)
    first = await scheduler.tick(dt.datetime(2026, 3, 1, 2, 0, 5))
    second = await scheduler.tick(dt.datetime(2026, 3, 1, 2, 0, 40))
    assert len(first) == 1 and second == []


async def test_scheduler_without_llm_logs_a_skip_on_schedule(root: Path) -> None:
    update_settings(root, {"insight_extraction_enabled": True})
    write_memory_file(root, "MEMORY.md", "v " * 1000)
    scheduler = InsightScheduler([root], None)
    ran = await scheduler.tick(dt.datetime(2026, 3, 1, 2, 0))
    assert [(o.status, o.reason) for _, o in ran] == [("skipped", "no_llm_provider")]


async def test_scheduler_start_and_stop_run_the_loop_with_the_injected_clock(
    root: Path, llm: Any
) -> None:
    server, client = llm
    update_settings(root, {"insight_extraction_enabled": True})
    write_memory_file(root, "MEMORY.md", "u " * 1000)
    scheduler = InsightScheduler(
        [root], client, clock=lambda: dt.datetime(2026, 3, 1, 2, 0), poll_seconds=0.01
    )
    scheduler.start()
    assert scheduler.running
    for _ in range(200):
        if scheduler.outcomes:
            break
        await asyncio.sleep(0.01)
    await scheduler.stop()
    assert not scheduler.running
    assert [o.status for _, o in scheduler.outcomes] == ["extracted"]
    assert len(server.requests) == 1
