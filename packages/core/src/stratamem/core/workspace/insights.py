"""Insight extraction: working memory (``MEMORY.md``) → ``memory-insights.md`` plus an audit trail.

Runs only through a real LLM provider; with none it is skipped with a logged reason, never faked.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.telemetry import get_logger
from stratamem.core.workspace.atomic import atomic_write_bytes
from stratamem.core.workspace.paths import (
    MEMORY_AUDIT_FILENAME,
    MEMORY_INSIGHTS_FILENAME,
    MEMORY_LONG_TERM_FILENAME,
    STRATAMEM_DIR,
    memory_workspace_path,
)
from stratamem.core.workspace.recall.normalize import normalize_recall_content
from stratamem.core.workspace.settings import (
    DEFAULT_INSIGHT_SCHEDULE,
    DEFAULT_MIN_INTERVAL_MS,
    effective_settings,
)

MIN_INSIGHT_GROWTH_CHARS = 1000
INSIGHT_EXTRACTION_SCHEDULE_NAME = "Memory Insight Extraction"
INSIGHT_CATEGORIES: tuple[str, ...] = ("pattern", "principle", "convention", "pitfall", "context")
_SECTION = {
    "pattern": "## Patterns",
    "principle": "## Principles",
    "convention": "## Conventions",
    "pitfall": "## Pitfalls",
    "context": "## Context",
}


def _log() -> Any:
    return get_logger("workspace.insights")  # resolved per call: honours logging configured later


__all__ = ["DEFAULT_INSIGHT_SCHEDULE", "DEFAULT_MIN_INTERVAL_MS"]

InsightCategory = Literal["pattern", "principle", "convention", "pitfall", "context"]


class LlmProvider(Protocol):
    async def complete(self, messages: list[dict[str, str]], json_mode: bool = False) -> Any: ...


@dataclass(frozen=True, slots=True)
class MemoryInsight:
    category: str
    content: str
    source: str | None = None
    extracted_at: str = ""


@dataclass(frozen=True, slots=True)
class InsightExtractionResult:
    insights: list[MemoryInsight]
    summary: str
    extracted_at: str


@dataclass(frozen=True, slots=True)
class InsightRunOutcome:
    status: Literal["extracted", "skipped", "failed"]
    reason: str
    added: int = 0
    details: dict[str, Any] = field(default_factory=dict)


def insights_path(root: Path) -> Path:
    return memory_workspace_path(root) / MEMORY_INSIGHTS_FILENAME


def audit_path(root: Path) -> Path:
    return memory_workspace_path(root) / MEMORY_AUDIT_FILENAME


def state_path(root: Path) -> Path:
    return root / STRATAMEM_DIR / "insights-state.json"


def read_working_memory(root: Path) -> str:
    """The working memory (``MEMORY.md``); ``""`` when absent or unreadable."""
    try:
        return (memory_workspace_path(root) / MEMORY_LONG_TERM_FILENAME).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def read_insights_memory(root: Path) -> str | None:
    """The insights file, ``None`` (not ``""``) when absent."""
    try:
        return insights_path(root).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def write_insights_memory(root: Path, content: str) -> None:
    """Create the workspace directory and the insights file if needed; atomic replace."""
    atomic_write_bytes(insights_path(root), content.encode("utf-8"))


def get_default_insights_template() -> str:
    sections = "\n\n".join(f"{_SECTION[c]}\n" for c in INSIGHT_CATEGORIES)
    return "# Memory Insights\n\nDistilled knowledge extracted from working memory.\n\n" + sections


def build_insight_extraction_prompt(working_memory: str, existing_insights: str | None) -> str:
    cats = ", ".join(INSIGHT_CATEGORIES)
    parts = [
        "You distil a software project's working memory into durable insights.",
        f"Categories: {cats}.",
        "Return JSON only: "
        '{"summary": "<one sentence>", "insights": [{"category": "<category>", '
        '"content": "<one concise sentence>", "source": "<optional heading>"}]}',
        "Skip anything already present in the existing insights, task progress and trivia.",
        "",
        "## Working memory",
        working_memory.strip() or "(empty)",
        "",
        "## Existing insights",
        (existing_insights or "").strip() or "(none)",
    ]
    return "\n".join(parts)


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


def parse_insight_extraction_response(
    response: str, now: dt.datetime | None = None
) -> InsightExtractionResult:
    """Parse the model's JSON (code fences tolerated); unknown categories and blanks are dropped."""
    stamp = (now or dt.datetime.now(dt.UTC)).isoformat()
    text = response.strip() if isinstance(response, str) else ""
    m = _FENCE.match(text)
    if m:
        text = m.group(1)
    try:
        data = json.loads(text)
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        try:
            data = json.loads(text[start : end + 1]) if start >= 0 < end else None
        except ValueError:
            data = None
    if not isinstance(data, dict) or not isinstance(data.get("insights", []), list):
        raise StratamemError(
            ErrorCode.LLM_OUTPUT_MALFORMED, "insight extraction response is not the expected JSON"
        )
    insights: list[MemoryInsight] = []
    for item in data.get("insights", []):
        if not isinstance(item, dict):
            continue
        cat = str(item.get("category", "")).strip().lower()
        content = " ".join(str(item.get("content", "")).split())
        if cat not in INSIGHT_CATEGORIES or not content:
            continue
        source = item.get("source")
        insights.append(MemoryInsight(cat, content, str(source) if source else None, stamp))
    summary = data.get("summary")
    return InsightExtractionResult(insights, str(summary) if summary else "", stamp)


def _existing_keys(text: str) -> set[str]:
    return {
        normalize_recall_content(line[2:]) for line in text.splitlines() if line.startswith("- ")
    }


def merge_insights(existing: str | None, new_insights: Sequence[MemoryInsight]) -> str:
    """Add each new insight under its category heading unless an equal one (normalised) exists."""
    text = existing if existing and existing.strip() else get_default_insights_template()
    seen = _existing_keys(text)
    lines = text.rstrip("\n").split("\n")
    for insight in new_insights:
        key = normalize_recall_content(insight.content)
        if not key or key in seen or insight.category not in _SECTION:
            continue
        seen.add(key)
        heading = _SECTION[insight.category]
        if heading not in lines:
            lines.extend(["", heading])
        idx = lines.index(heading) + 1
        while idx < len(lines) and not lines[idx].startswith("#"):
            idx += 1
        while idx > 0 and lines[idx - 1] == "":
            idx -= 1
        lines.insert(idx, f"- {insight.content}")
    return "\n".join(lines) + "\n"


def should_trigger_extraction(
    last_run_ms: int | None,
    settings: Mapping[str, Any] | None,
    working_memory_size: int,
    last_memory_size: int,
    now_ms: int,
) -> bool:
    """Both the minimum interval has elapsed AND memory grew by at least 1,000 characters."""
    eff = effective_settings(settings)
    interval = int(eff["insight_extraction_min_interval_ms"])
    elapsed_ok = last_run_ms is None or now_ms - last_run_ms >= interval
    grown_ok = working_memory_size - last_memory_size >= MIN_INSIGHT_GROWTH_CHARS
    return elapsed_ok and grown_ok


def _load_state(root: Path) -> dict[str, Any]:
    try:
        data = json.loads(state_path(root).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


async def run_insight_extraction(
    root: Path,
    llm: LlmProvider | None,
    settings: Mapping[str, Any] | None = None,
    *,
    now: dt.datetime | None = None,
    force: bool = False,
) -> InsightRunOutcome:
    """One extraction pass: gate on ``should_trigger`` (unless forced), ask the LLM, merge, audit."""
    when = now or dt.datetime.now(dt.UTC)
    now_ms = int(when.timestamp() * 1000)
    if llm is None:
        _log().info("insight extraction skipped: no LLM provider configured", root=str(root))
        return InsightRunOutcome("skipped", "no_llm_provider")
    working = read_working_memory(root)
    state = _load_state(root)
    last_run = state.get("last_run_ms")
    last_size = int(state.get("last_memory_size", 0))
    if not force and not should_trigger_extraction(
        last_run if isinstance(last_run, int) else None, settings, len(working), last_size, now_ms
    ):
        _log().info(
            "insight extraction skipped: interval or growth threshold not met", root=str(root)
        )
        return InsightRunOutcome("skipped", "threshold_not_met")
    existing = read_insights_memory(root)
    prompt = build_insight_extraction_prompt(working, existing)
    try:
        reply = await llm.complete(
            [
                {"role": "system", "content": "You extract durable engineering insights as JSON."},
                {"role": "user", "content": prompt},
            ],
            json_mode=True,
        )
        result = parse_insight_extraction_response(str(getattr(reply, "text", reply)), when)
    except Exception as exc:
        _log().warning("insight extraction failed", root=str(root), error=str(exc))
        _append_audit(root, when, f"failed: {exc}")
        return InsightRunOutcome("failed", "llm_error", details={"error": str(exc)})
    before = _existing_keys(existing or "")
    merged = merge_insights(existing, result.insights)
    added = len(_existing_keys(merged) - before)
    write_insights_memory(root, merged)
    _append_audit(
        root,
        when,
        f"extracted {len(result.insights)} insight(s), {added} new. {result.summary}".strip(),
    )
    state_data = {"last_run_ms": now_ms, "last_memory_size": len(working)}
    atomic_write_bytes(state_path(root), json.dumps(state_data).encode("utf-8"))
    return InsightRunOutcome("extracted", "ok", added=added)


def _append_audit(root: Path, when: dt.datetime, line: str) -> None:
    path = audit_path(root)
    try:
        current = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = "# Memory Audit\n\n"
    atomic_write_bytes(path, (current + f"- {when.isoformat()} {line}\n").encode("utf-8"))
