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

from stratamem.contract.dtos import Health, Namespace
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
        prepare_allocator(args)  # before the engine's imports (a ``through_service`` command's)
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


R = TypeVar("R", bound=Callable[..., Any])


def reads_home(run: R) -> R:
    """Mark a command that reads an existing home: on a missing one it fails (``--create`` makes
    one), so a typo in ``--home`` is an error instead of a new, empty home."""
    run.reads_home = True  # type: ignore[attr-defined]
    return run


def through_service(run: R) -> R:
    """Mark a command that reaches the engine only through ``opened_core``: the service's process
    owns it, so this one skips ``prepare_allocator`` (and the config read it needs) unless
    ``--offline`` opens the engine here, where ``opened_core`` prepares it first."""
    run.through_service = True  # type: ignore[attr-defined]
    return run


def prepare_allocator(args: argparse.Namespace) -> None:
    """Cap glibc's malloc arenas before anything of the engine starts a thread: importing pyarrow
    and LanceDB already makes arenas that later threads are spread over (storage/allocator.py
    ``prepare_process``). The home's config file may set the cap; one that cannot be read leaves
    the defaults (the command reports it)."""
    from stratamem.core.config.defaults import DEFAULTS
    from stratamem.core.storage import allocator

    storage = dict(DEFAULTS["storage"])
    try:
        from stratamem.core.config.loader import CONFIG_FILE, read_user_config
        from stratamem.core.home import resolve_home

        user = read_user_config(resolve_home(getattr(args, "home", None)) / CONFIG_FILE)
        storage.update(user.get("storage") or {})
    except Exception:  # the command itself reports a bad home or config
        pass
    allocator.prepare_process(storage)


def missing_home_message(args: argparse.Namespace) -> str | None:
    """An error naming the home when it does not exist, else ``None``."""
    from stratamem.core.home import resolve_home

    home = resolve_home(getattr(args, "home", None))
    if home.is_dir() and ((home / "config.yaml").exists() or (home / "data").is_dir()):
        return None
    return (
        f"stratamem: error [home_not_found] no Stratamem home at {home}; "
        f"check --home / $STRATAMEM_HOME, or create it with `stratamem serve --home {home}`, "
        "`stratamem ingest`, or --create"
    )


def label(ns: Namespace) -> str:
    return f"{ns.agent_kind}/{ns.profile_id}"


def namespace_given(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "namespace", None))


async def namespaces_with_memories(
    core: MemoryCore, health: Health | None = None
) -> list[Namespace]:
    """Every namespace holding an episode, newest activity first, as ``health`` names them (one
    small call; ``health``: an answer the caller already has). The CLI is the home's owner (its
    socket is unrestricted), so that is every namespace of the home.

    A service older than ``Health.namespaces`` leaves it empty; when it still counts episodes,
    they are listed page by page instead (every episode of the home: what this cost before)."""
    if health is None:
        health = await core.health()
    if health.namespaces or not health.counts.get("episodes"):
        return list(health.namespaces)
    return await _namespaces_by_listing(core)


async def _namespaces_by_listing(core: MemoryCore) -> list[Namespace]:
    """The namespaces of every episode, in first-seen order (newest episode first).

    Paged by offset, not by the ``after`` cursor: only a service older than ``Health.namespaces``
    gets here, and such a service also ignores ``after`` on episodes (it would answer the first
    page again and again)."""
    from stratamem.contract.dtos import ListQuery

    seen: dict[tuple[str, str], Namespace] = {}
    offset, page = 0, 500
    while True:
        batch = await core.list_episodes(
            ListQuery(limit=page, offset=offset, include_all_namespaces=True)
        )
        for ep in batch:
            key = (ep.owner.owner_agent_kind, ep.owner.owner_profile_id)
            if key not in seen:
                seen[key] = Namespace(agent_kind=key[0], profile_id=key[1])
        if len(batch) < page:
            return list(seen.values())
        offset += page
