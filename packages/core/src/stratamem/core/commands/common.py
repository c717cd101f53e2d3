"""What every command shares: the namespace flag, opening the home's core, typed-error exits."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from stratamem.contract.dtos import Namespace
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.protocol import MemoryCore

T = TypeVar("T")

CLI_AGENT = "cli"


def namespace_of(args: argparse.Namespace) -> Namespace:
    """``--namespace AGENT/PROFILE`` (default ``cli/default``)."""
    raw = getattr(args, "namespace", None) or f"{CLI_AGENT}/default"
    agent, sep, profile = raw.partition("/")
    if not agent.strip() or (sep and not profile.strip()) or "/" in profile:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT,
            f"--namespace must be AGENT/PROFILE, got {raw!r}",
            {"namespace": raw},
        )
    return Namespace(agent_kind=agent.strip(), profile_id=(profile.strip() or "default"))


@asynccontextmanager
async def opened_core(args: argparse.Namespace) -> AsyncIterator[MemoryCore]:
    """The home's core: owned here, or the owner's over its socket (``open_core`` decides)."""
    from stratamem.core import open_core

    async with open_core(getattr(args, "home", None)) as core:
        yield core


def run_async(args: argparse.Namespace, body: Callable[[MemoryCore], Awaitable[int]]) -> int:
    """Open the core, run ``body``, map a ``StratamemError`` to a message on stderr and exit 1."""

    async def main() -> int:
        async with opened_core(args) as core:
            return await body(core)

    try:
        return asyncio.run(main())
    except StratamemError as exc:
        print(f"stratamem: error [{exc.code.value}] {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=None, default=str) + "\n")
