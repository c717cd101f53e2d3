"""What every command shares: the namespace flag, opening the home's core, typed-error exits."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
    """The home's core, as a thin client of its resident service (started on demand).

    ``--offline`` opens the engine in this process instead (maintenance; no service is started,
    and a running one is still used over its socket).
    """
    from stratamem.core.home import resolve_home

    home = resolve_home(getattr(args, "home", None))
    if getattr(args, "offline", False):
        from stratamem.core import open_core

        async with open_core(home) as core:
            yield core
        return
    from stratamem.contract.hostkit.client import connect

    remote = await connect(home, start_budget_s())
    try:
        yield remote
    finally:
        await remote.shutdown()


def start_budget_s() -> float:
    """How long a command waits for a service it had to start (``$STRATAMEM_CLIENT_START_BUDGET_S``)."""
    from stratamem.contract.hostkit.client import DEFAULT_START_BUDGET_S

    env = os.environ.get("STRATAMEM_CLIENT_START_BUDGET_S")
    if env:
        try:
            return float(env)
        except ValueError:
            pass
    return DEFAULT_START_BUDGET_S


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
