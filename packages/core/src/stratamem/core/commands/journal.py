"""``stratamem journal list|retry|discard``: the capture journal's set-aside entries.

An entry the background writer could not apply after its bounded retries is set aside (kept with its
attempts and last error) so later turns go on. ``retry`` queues it again with a fresh budget;
``discard`` drops it for good. In-process owner: through its writer. When a server owns the home,
the SQLite journal is changed directly and the owner picks requeued entries up at its next
housekeeping tick (``journal.prune_interval_s``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from stratamem.contract.errors import StratamemError
from stratamem.core.commands.common import opened_core, print_json

NAME = "journal"
HELP = "list, retry or discard capture-journal entries set aside after failed retries"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "retry", "discard"))
    parser.add_argument(
        "seqs", nargs="*", type=int, help="journal seqs (default: every set-aside entry)"
    )


async def act(core: Any, action: str, seqs: list[int] | None, home: Any = None) -> dict[str, Any]:
    writer = getattr(core, "journal", None)
    if writer is not None:
        if action == "list":
            return {"set_aside": await writer.set_aside()}
        if action == "retry":
            return {"requeued": await writer.retry_set_aside(seqs)}
        return {"discarded": await writer.discard_set_aside(seqs)}
    from stratamem.core.home import resolve_home
    from stratamem.core.storage.journal import dead_letter
    from stratamem.core.storage.sqlite import Database

    db = Database(resolve_home(home) / "data" / "stratamem.db")
    try:
        if action == "list":
            return {"set_aside": [dead_letter(r) for r in db.journal_set_aside_rows()]}
        if action == "retry":
            return {"requeued": len(db.journal_requeue(seqs)), "note": "the owner applies them"}
        return {"discarded": db.journal_discard(seqs)}
    finally:
        db.close()


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        async with opened_core(args) as core:
            out = await act(core, args.action, list(args.seqs) or None, getattr(args, "home", None))
        print_json(out)
        return 0

    try:
        return asyncio.run(main())
    except StratamemError as exc:
        print(f"stratamem: error [{exc.code.value}] {exc.message}", file=sys.stderr)
        return 1
