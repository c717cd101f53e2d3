"""``stratamem doctor``: storage health of a home — rows, fragments, versions, unindexed rows, bytes —
and the config.yaml keys Stratamem does not know (a typo there is ignored, so say it to the user).

Reads the store directly when it owns the home (``--offline``); otherwise the resident service
answers for its own store (the ``StorageStats`` RPC), since only the owning process may open it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from stratamem.contract.errors import StratamemError
from stratamem.core.commands.common import opened_core, print_json, reads_home


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


async def collect(core: Any) -> dict[str, Any]:
    from stratamem.core import __version__

    health = await core.health()
    report: dict[str, Any] = {
        "version": __version__,
        "home": health.home,
        "mode": health.mode,
        "embedder": {"model": health.embedder.model, "dimension": health.embedder.dimension},
        "journal_backlog": health.journal_backlog,
        "journal_set_aside": int(health.counts.get("journal_set_aside", 0)),
        "counts": dict(health.counts),
    }
    store = getattr(core, "store", None)
    writer = getattr(core, "journal", None)
    if writer is not None:
        report["journal_set_aside"] = writer.set_aside_total
    elif "journal_set_aside" not in health.counts and health.home:
        report["journal_set_aside"] = _set_aside_on_disk(health.home)
    if health.home:
        from pathlib import Path

        from stratamem.core.config.loader import unknown_keys

        report["config_unknown_keys"] = unknown_keys(Path(health.home))
    if store is not None:  # in-process owner: full table statistics
        report["tables"] = await store.stats()
        data = core.home / "data"
        report["sqlite_bytes"] = sum(p.stat().st_size for p in data.glob("stratamem.db*"))
    elif hasattr(core, "storage_stats"):  # a service owns the home: it reads its own store
        stats = await core.storage_stats()
        report["tables"] = stats.get("tables")
        report["sqlite_bytes"] = stats.get("sqlite_bytes")
    return report


def _set_aside_on_disk(home: str) -> int:
    """Set-aside journal entries read from the home's SQLite (WAL: safe beside the owner)."""
    from pathlib import Path

    from stratamem.core.storage.sqlite import Database

    path = Path(home) / "data" / "stratamem.db"
    if not path.exists():
        return 0
    db = Database(path)
    try:
        return db.journal_set_aside_count()
    finally:
        db.close()


@reads_home
def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        async with opened_core(args) as core:
            report = await collect(core)
        print_json(report)
        for key in report.get("config_unknown_keys") or ():
            print(
                f"stratamem: warning: config.yaml key {key!r} is not a setting (ignored)",
                file=sys.stderr,
            )
        return 0

    try:
        return asyncio.run(main())
    except StratamemError as exc:
        print(f"stratamem: error [{exc.code.value}] {exc.message}", file=sys.stderr)
        return 1
