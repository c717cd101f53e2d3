"""Every LLM call a bench core makes, timed at the provider: which task asked (the
``stratamem-task:`` line of the system message), how long it took, its tokens and how it ended.
The bench wraps ``core.llm`` with :class:`TimedLlm`; the core's own code runs unchanged."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from bench.stats import percentile

TASK_PREFIX = "stratamem-task: "


def task_of(messages: Sequence[Any]) -> str:
    """``retrieval.rewrite`` for a system message starting ``stratamem-task: retrieval.rewrite``;
    ``other`` when no message names its task."""
    for m in messages:
        content = str(m.get("content", "")) if isinstance(m, dict) else ""
        if m.get("role") == "system" and content.startswith(TASK_PREFIX):
            return content[len(TASK_PREFIX) :].splitlines()[0].strip() or "other"
    return "other"


class TimedLlm:
    """``inner`` with each ``complete`` call appended to ``calls`` (outcome ``ok``, the error code,
    ``cancelled`` when the caller's own deadline stopped it, or ``error``)."""

    def __init__(self, inner: Any, calls: list[dict[str, Any]]) -> None:
        self.inner = inner
        self.calls = calls
        self.name = getattr(inner, "name", "llm")
        self.model = getattr(inner, "model", "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, messages: list[Any], **kwargs: Any) -> Any:
        entry: dict[str, Any] = {"task": task_of(messages), "outcome": "error"}
        t0 = time.perf_counter()
        try:
            done = await self.inner.complete(messages, **kwargs)
        except asyncio.CancelledError:
            entry["outcome"] = "cancelled"
            raise
        except Exception as exc:
            code = getattr(exc, "code", None)
            entry["outcome"] = str(getattr(code, "value", "") or "error")
            raise
        else:
            entry["outcome"] = "ok"
            usage = getattr(done, "usage", None) or {}
            entry["prompt_tokens"] = int(usage.get("prompt_tokens") or 0)
            entry["completion_tokens"] = int(usage.get("completion_tokens") or 0)
            return done
        finally:
            entry["ms"] = (time.perf_counter() - t0) * 1000
            self.calls.append(entry)


def summarise(calls: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per task: calls, outcomes, latency p50/p95 (every call, and answered ones) and the answered
    calls' median prompt / completion tokens."""
    out: dict[str, dict[str, Any]] = {}
    for task in sorted({c["task"] for c in calls}):
        mine = [c for c in calls if c["task"] == task]
        ok = [c for c in mine if c["outcome"] == "ok"]
        outcomes: dict[str, int] = {}
        for c in mine:
            outcomes[c["outcome"]] = outcomes.get(c["outcome"], 0) + 1
        row: dict[str, Any] = {
            "calls": len(mine),
            "outcomes": outcomes,
            "ms": {
                "p50": round(percentile([c["ms"] for c in mine], 50), 1),
                "p95": round(percentile([c["ms"] for c in mine], 95), 1),
            },
        }
        if ok:
            row["answered_ms"] = {
                "p50": round(percentile([c["ms"] for c in ok], 50), 1),
                "p95": round(percentile([c["ms"] for c in ok], 95), 1),
            }
            row["prompt_tokens_median"] = percentile([c["prompt_tokens"] for c in ok], 50)
            row["completion_tokens_median"] = percentile([c["completion_tokens"] for c in ok], 50)
        out[task] = row
    return out


def render(summary: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown table lines for :func:`summarise`'s result (empty when no call was made)."""
    if not summary:
        return []
    lines = [
        "| LLM task | calls | outcomes | ms p50 / p95 (all) | ms p50 / p95 (answered) "
        "| prompt / completion tokens (median) |",
        "|---|---|---|---|---|---|",
    ]
    for task, s in summary.items():
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(s["outcomes"].items()))
        ans = s.get("answered_ms")
        answered = f"{ans['p50']} / {ans['p95']}" if ans else "–"
        toks = (
            f"{s['prompt_tokens_median']} / {s['completion_tokens_median']}"
            if "prompt_tokens_median" in s
            else "–"
        )
        lines.append(
            f"| {task} | {s['calls']} | {outcomes} | {s['ms']['p50']} / {s['ms']['p95']} | "
            f"{answered} | {toks} |"
        )
    return lines
