"""The journal writer counts its LanceDB commits (``JournalWriter.commits_total``), one per
applied batch: the soak reports commits per 10k turns beside RSS (bench/soak.py)."""

from __future__ import annotations

import time
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stratamem.contract.dtos import TurnResult
from stratamem.core import open_core


async def test_the_writer_counts_one_commit_per_applied_batch(
    tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    async with open_core(tmp_path, embedding__provider="none") as core:
        v0 = (await core.store.stats())["traces"]["version"]
        for i in range(40):
            await core.turn_end(
                TurnResult(
                    agent="hermes",
                    session_id="s-commits",
                    agent_text=f"answer {i}",
                    user_text=f"commit counting question {i}",
                    ts=int(time.time() * 1000),
                )
            )
        await core.journal.drain(60)
        applies = [
            s for s in span_exporter.get_finished_spans() if s.name == "stratamem.journal.apply"
        ]
        assert core.journal.applied_total == 40
        assert sum(int(s.attributes["entries"]) for s in applies) == 40  # type: ignore[index]
        assert core.journal.commits_total == len(applies) >= 1
        # each commit is (at least) one new version of the traces table
        v1 = (await core.store.stats())["traces"]["version"]
        assert v1 - v0 >= core.journal.commits_total
