"""Logs: JSON lines with a channel, secrets redacted at any depth, file sinks in <home>/logs, trace ids."""

from __future__ import annotations

import gzip
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.events import EventBus
from stratamem.core.telemetry import (
    attach_event_log,
    configure_logging,
    get_logger,
    redact,
    reset_logging,
    span,
)
from stratamem.core.telemetry.redact import MASK
from stratamem.core.telemetry.sinks import MonthlyFileHandler


@pytest.fixture(autouse=True)
def _clean_logging() -> Iterator[None]:
    reset_logging()
    yield
    reset_logging()


def lines(path: Path) -> list[dict[str, Any]]:
    for h in logging.getLogger("stratamem").handlers:
        h.flush()
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_secret_keys_are_masked_in_nested_dicts_and_lists() -> None:
    data = {
        "llm": {
            "endpoint": "http://x",
            "apiKey": "sk-1",
            "headers": [{"Authorization": "Bearer abc"}],
        },
        "server": {"tokens": {"t0k3n": ["a/b"]}, "TLS": {"password": "hunter2"}},
        "list": [[{"Client-Secret": "s", "X-Api-Key": "k", "Cookie": "c=1"}]],
        "usage": {"prompt_tokens": 10, "total_tokens": 12, "max_tokens": 64},
        "tokenizer": "wordpiece",
        "empty_api_key": "",
    }
    out = redact(data)
    assert out["llm"] == {
        "endpoint": "http://x",
        "apiKey": MASK,
        "headers": [{"Authorization": MASK}],
    }
    assert out["server"] == {"tokens": MASK, "TLS": {"password": MASK}}
    assert out["list"] == [[{"Client-Secret": MASK, "X-Api-Key": MASK, "Cookie": MASK}]]
    assert out["usage"] == {"prompt_tokens": 10, "total_tokens": 12, "max_tokens": 64}
    assert out["tokenizer"] == "wordpiece" and out["empty_api_key"] == ""
    assert data["llm"]["apiKey"] == "sk-1"  # the input is untouched


def test_secrets_inside_strings_are_masked() -> None:
    text = "curl -H 'Authorization: Bearer eyJhbGciOi.abc-123' 'http://h/v1?api_key=zzz123&x=1' key sk-abcdef123456"
    out = redact(text)
    assert "eyJhbGciOi" not in out and "zzz123" not in out and "abcdef123456" not in out
    assert "x=1" in out and "Bearer [REDACTED]" in out


def test_app_log_is_json_with_channel_and_no_secret(tmp_path: Path) -> None:
    setup = configure_logging(tmp_path, {"logging": {"level": "info"}})
    assert setup.owned and setup.logs_dir == tmp_path / "logs"
    get_logger("storage").info("opened", config={"llm": {"api_key": "sk-secret-999999"}}, rows=3)
    get_logger("storage").debug("too chatty")
    rec = lines(tmp_path / "logs" / "stratamem.log")
    assert len(rec) == 1
    assert (
        rec[0]["channel"] == "storage" and rec[0]["event"] == "opened" and rec[0]["level"] == "info"
    )
    assert rec[0]["timestamp"].endswith("Z") and rec[0]["rows"] == 3
    raw = (tmp_path / "logs" / "stratamem.log").read_text()
    assert "sk-secret-999999" not in raw and MASK in raw
    assert oct(os.stat(tmp_path / "logs" / "stratamem.log").st_mode & 0o777) == "0o600"


def test_each_channel_reaches_its_own_file(tmp_path: Path) -> None:
    configure_logging(tmp_path, {"level": "info"})
    get_logger("llm").info("llm.call", provider="p", prompt_tokens=5, api_key="k-123")
    get_logger("audit").info("config.changed", key="llm.model", who="cli")
    get_logger("core").error("boom", error="disk full")
    with span("retrieval.tier2", hits=4):
        pass
    bus = EventBus()
    attach_event_log(bus)
    bus.emit("session.opened", {"session_id": "s1", "token": "abc"})
    logs = tmp_path / "logs"
    assert [r["event"] for r in lines(logs / "llm.jsonl")] == ["llm.call"]
    assert lines(logs / "llm.jsonl")[0]["api_key"] == MASK
    assert [r["key"] for r in lines(logs / "audit.log")] == ["llm.model"]
    assert [r["event"] for r in lines(logs / "error.log")] == ["boom"]
    perf = lines(logs / "perf.jsonl")
    assert (
        perf[0]["stage"] == "retrieval.tier2"
        and perf[0]["hits"] == 4
        and perf[0]["duration_ms"] >= 0
    )
    ev = lines(logs / "events.jsonl")
    assert ev[0]["type"] == "session.opened" and ev[0]["seq"] == 1
    assert ev[0]["payload"] == {"session_id": "s1", "token": MASK}
    app = [r["channel"] for r in lines(logs / "stratamem.log")]
    assert "perf" not in app and "events" not in app and {"llm", "audit", "core"} <= set(app)


def test_log_lines_inside_a_span_carry_its_trace_and_span_ids(tmp_path: Path) -> None:
    configure_logging(tmp_path, {})
    with span("pipeline.turn_start", session="s1") as s:
        get_logger("pipeline").info("inside")
        ctx = s.get_span_context()
    get_logger("pipeline").info("outside")
    inside, outside = lines(tmp_path / "logs" / "stratamem.log")
    assert inside["trace_id"] == format(ctx.trace_id, "032x") and len(inside["trace_id"]) == 32
    assert inside["span_id"] == format(ctx.span_id, "016x")
    assert "trace_id" not in outside


def test_console_lines_go_to_stderr_not_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(None, {"console": True, "level": "info"})
    get_logger("cli").info("progress", done=3, password="pw")
    out, err = capsys.readouterr()
    assert out == ""
    rec = json.loads(err.strip().splitlines()[-1])
    assert rec["event"] == "progress" and rec["password"] == MASK
    assert not (tmp_path / "logs").exists()


def test_embedded_core_leaves_the_hosts_logging_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root_handlers = list(logging.getLogger().handlers)
    setup = configure_logging(tmp_path, {"level": "info"}, embedded=True)
    assert not setup.owned and not (tmp_path / "logs").exists()
    assert logging.getLogger().handlers == root_handlers
    with caplog.at_level(logging.INFO):
        get_logger("hermes").info("seen by host", api_key="sk-host-secret-1")
    record = [r for r in caplog.records if r.name == "stratamem"][-1]
    assert "seen by host" in record.getMessage() and "sk-host-secret-1" not in record.getMessage()


def test_embedded_core_can_be_told_to_own_its_files(tmp_path: Path) -> None:
    setup = configure_logging(tmp_path, {"embedded": "own"}, embedded=True)
    assert setup.owned and (tmp_path / "logs" / "stratamem.log").exists()


def test_reconfiguring_replaces_sinks_instead_of_doubling_them(tmp_path: Path) -> None:
    configure_logging(tmp_path, {})
    configure_logging(tmp_path, {})
    get_logger("x").info("once")
    assert len(lines(tmp_path / "logs" / "stratamem.log")) == 1


def test_bad_level_is_config_invalid(tmp_path: Path) -> None:
    with pytest.raises(StratamemError) as exc:
        configure_logging(tmp_path, {"level": "loud"})
    assert (
        exc.value.code == ErrorCode.CONFIG_INVALID and exc.value.details["key"] == "logging.level"
    )


def test_app_log_rotates_by_size_and_keeps_a_bounded_number(tmp_path: Path) -> None:
    configure_logging(tmp_path, {"file_max_bytes": 2048, "file_backups": 2})
    log = get_logger("bulk")
    for i in range(200):
        log.info("line", i=i, pad="x" * 80)
    names = sorted(p.name for p in (tmp_path / "logs").glob("stratamem.log*"))
    assert names == ["stratamem.log", "stratamem.log.1.gz", "stratamem.log.2.gz"]
    with gzip.open(tmp_path / "logs" / "stratamem.log.1.gz", "rt") as f:
        assert json.loads(f.readline())["event"] == "line"


def test_audit_log_rolls_over_monthly_and_keeps_every_month(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    months = iter(
        [1_767_225_600.0, 1_769_904_000.0, 1_772_323_200.0]
    )  # 2026-01-01, 02-01, 03-01 UTC
    now = [next(months)]
    handler = MonthlyFileHandler(path, clock=lambda: now[0])
    handler.setFormatter(logging.Formatter("%(message)s"))

    def write(msg: str) -> None:
        handler.emit(logging.LogRecord("a", logging.INFO, __file__, 1, msg, None, None))

    write("january")
    now[0] = next(months)
    write("february")
    now[0] = next(months)
    write("march")
    handler.close()
    assert path.read_text() == "march\n"
    with gzip.open(tmp_path / "audit-2026-01.log.gz", "rt") as f:
        assert f.read() == "january\n"
    with gzip.open(tmp_path / "audit-2026-02.log.gz", "rt") as f:
        assert f.read() == "february\n"


def test_the_package_redact_is_the_function_whatever_was_imported_first() -> None:
    """``redact`` is both a function the package exports and the name of its module."""
    import subprocess
    import sys

    code = (
        "import stratamem.core.telemetry.redact\n"
        "from stratamem.core.telemetry import redact\n"
        "assert callable(redact), redact\n"
        "assert redact({'api_key': 'sk-secret-1'})['api_key'] != 'sk-secret-1'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
