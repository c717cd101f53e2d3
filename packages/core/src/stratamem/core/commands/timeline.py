"""``stratamem timeline EPISODE_ID``: replay an episode's traces in order.

Without ``--namespace`` the episode is looked up in every namespace of the home. A trace id (what
``stratamem search`` prints) stands for its episode."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from datetime import datetime

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.protocol import MemoryCore
from stratamem.core.commands.common import (
    label,
    namespace_given,
    namespace_of,
    namespaces_with_memories,
    print_json,
    reads_home,
    run_async,
    through_service,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "episode_id",
        help="an episode id (the viewer, `export`), or a trace id as `stratamem search` prints it",
    )


@reads_home
@through_service
def run(args: argparse.Namespace) -> int:
    async def body(core: MemoryCore) -> int:
        given = namespace_given(args)
        candidates = [namespace_of(args)]
        if not given:
            candidates += [n for n in await namespaces_with_memories(core) if n not in candidates]
        episode = args.episode_id
        for ns in candidates:
            if await core.get_episode(episode, namespace=ns) is not None:
                break
            # search prints trace ids: a trace stands for its episode (one lookup, here only)
            trace = await core.get_trace(args.episode_id, namespace=ns)
            if trace is not None:
                episode = trace.episode_id
                print(f"trace {trace.id} is in episode {episode}", file=sys.stderr)
                break
        else:
            where = ", ".join(label(n) for n in candidates)
            raise StratamemError(
                ErrorCode.EPISODE_NOT_FOUND,
                f"no episode or trace {args.episode_id!r} in "
                f"namespace{'s' * (len(candidates) > 1)} {where}",
            )
        if ns != candidates[0]:
            print(f"episode {episode} is in namespace {label(ns)}", file=sys.stderr)
        for t in await core.timeline(episode, namespace=ns):
            if args.json:
                print_json(dataclasses.asdict(t))
                continue
            print(f"{_when(t.ts)} {t.id} {t.summary or ''}")
            if t.user_text:
                print(f"  [user] {t.user_text}")
            for c in t.tool_calls:
                print(f"  [tool] {c.name}{' !' + c.error_code if c.error_code else ''}")
            if t.agent_text:
                print(f"  [assistant] {t.agent_text}")
        return 0

    return run_async(args, body)


def _when(ts_ms: int) -> str:
    """A trace's time as a reader takes it: local ISO time to the second (``--json`` keeps the
    epoch milliseconds)."""
    try:
        return datetime.fromtimestamp(ts_ms / 1000).astimezone().isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):  # past year 9999 (int64 allows it)
        return "unknown time"
