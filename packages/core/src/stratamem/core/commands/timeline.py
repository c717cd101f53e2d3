"""``stratamem timeline EPISODE_ID``: replay an episode's traces in order."""

from __future__ import annotations

import argparse
import dataclasses

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.protocol import MemoryCore
from stratamem.core.commands.common import namespace_of, print_json, run_async

NAME = "timeline"
HELP = "print an episode's traces in order (JSON lines with --json)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("episode_id")
    parser.add_argument("--json", action="store_true", help="one JSON trace per line")


def run(args: argparse.Namespace) -> int:
    async def body(core: MemoryCore) -> int:
        ns = namespace_of(args)
        if await core.get_episode(args.episode_id, namespace=ns) is None:
            raise StratamemError(
                ErrorCode.EPISODE_NOT_FOUND,
                f"episode {args.episode_id!r} not found in namespace {ns.agent_kind}/{ns.profile_id}",
            )
        for t in await core.timeline(args.episode_id, namespace=ns):
            if args.json:
                print_json(dataclasses.asdict(t))
                continue
            print(f"{t.ts} {t.id} {t.summary or ''}")
            if t.user_text:
                print(f"  [user] {t.user_text}")
            for c in t.tool_calls:
                print(f"  [tool] {c.name}{' !' + c.error_code if c.error_code else ''}")
            if t.agent_text:
                print(f"  [assistant] {t.agent_text}")
        return 0

    return run_async(args, body)
