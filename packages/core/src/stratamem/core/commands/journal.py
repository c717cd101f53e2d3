"""``stratamem journal list|retry|discard``: the capture journal's set-aside entries.

An entry the background writer could not apply after its bounded retries is set aside (kept with its
attempts and last error) so later turns go on. ``retry`` queues it again with a fresh budget;
``discard`` drops it for good. Either way the writer that owns the home acts: in process with
``--offline``, else the resident service over its ``Journal`` RPC, so a retried entry is applied at
once (not at the next housekeeping tick).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from stratamem.contract.errors import StratamemError
from stratamem.core.commands.common import opened_core, print_json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "retry", "discard"))
    parser.add_argument(
        "seqs", nargs="*", type=int, help="journal seqs (default: every set-aside entry)"
    )


async def act(core: Any, action: str, seqs: list[int] | None) -> dict[str, Any]:
    writer = getattr(core, "journal", None)
    if writer is not None:  # the engine is in this process (``--offline``)
        from stratamem.core.engine.maintenance import journal_action

        return await journal_action(writer, action, seqs)
    result: dict[str, Any] = await core.journal_admin(action, seqs)
    return result


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        async with opened_core(args) as core:
            out = await act(core, args.action, list(args.seqs) or None)
        print_json(out)
        return 0

    try:
        return asyncio.run(main())
    except StratamemError as exc:
        print(f"stratamem: error [{exc.code.value}] {exc.message}", file=sys.stderr)
        return 1
