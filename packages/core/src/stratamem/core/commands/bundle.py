"""``stratamem export`` / ``stratamem import``: a JSON bundle of the home's memories.

Export writes traces, episodes, policies, world models and skills of every namespace of the home (or
of the one ``--namespace`` names) and says what it wrote. Import replays each trace as a captured turn
into its owner namespace (idempotent by trace id, original session and turn time kept; a trace that
came back through another home, under that home's id, is known by its session, turn time and texts); learned
layers are re-derived from the traces by the learning pipeline rather than copied, so they stay
consistent.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import (
    Episode,
    ListQuery,
    Namespace,
    ToolCall,
    TurnResult,
    episode_cursor,
    learned_cursor,
    trace_cursor,
)
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.files import write_atomic
from stratamem.contract.protocol import MemoryCore
from stratamem.core.commands.common import (
    namespace_of,
    print_json,
    reads_home,
    run_async,
    through_service,
)

BUNDLE_VERSION = 1
PAGE = 200
#: the user text of an imported trace that had none (a turn needs one)
IMPORTED_TURN = "(imported turn)"


#: how long export waits, by default, for turns a restart's journal replay still has on disk
EXPORT_WAIT_S = 600.0


def configure_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, help="file to write (default stdout)")
    parser.add_argument(
        "--wait",
        type=float,
        default=EXPORT_WAIT_S,
        metavar="SECONDS",
        help="wait this long for acknowledged turns a restart's journal replay still has on "
        f"disk; past it, export fails and writes nothing (default {EXPORT_WAIT_S:g})",
    )


def configure_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path)


def _query(ns: Namespace | None, offset: int) -> ListQuery:
    """A page of ``ns``'s rows, or of every namespace of the home when ``ns`` is None."""
    return ListQuery(limit=PAGE, offset=offset, namespace=ns, include_all_namespaces=ns is None)


async def _all(fetch: Any, ns: Namespace | None) -> list[Any]:
    out: list[Any] = []
    offset = 0
    while True:
        page = await fetch(_query(ns, offset))
        out.extend(page)
        if len(page) < PAGE:
            return out
        offset += PAGE


async def _all_traces(core: MemoryCore, ns: Namespace | None) -> list[Any]:
    """Every trace, paged by keyset cursor (stable while the service keeps writing)."""
    out: list[Any] = []
    after: str | None = None
    while True:
        page = await core.list_traces(dataclasses.replace(_query(ns, 0), after=after))
        out.extend(page)
        if len(page) < PAGE:
            return out
        after = trace_cursor(page[-1])


async def _by_cursor(fetch: Any, cursor: Any, ns: Namespace | None) -> list[Any]:
    """Every row of a keyset-paged listing (episodes, policies, world models, skills), stable while
    the service keeps adding rows and its learner keeps changing them.

    A service older than the listing's cursor ignores ``after`` and answers the first page again:
    a page holding a row already listed is read that way (a service honouring the cursor never
    lists a row twice: the keys do not change), and the listing is then walked by offset as before
    (the old answer, not an endless loop)."""
    out: list[Any] = []
    listed: set[str] = set()
    while True:
        after = cursor(out[-1]) if out else None
        page = await fetch(dataclasses.replace(_query(ns, 0), after=after))
        if any(r.id in listed for r in page):
            return await _all(fetch, ns)
        out.extend(page)
        listed.update(r.id for r in page)
        if len(page) < PAGE:
            return out


async def _all_episodes(core: MemoryCore, ns: Namespace | None) -> list[Episode]:
    """Every episode, paged by keyset cursor (stable while the service keeps opening episodes)."""
    return await _by_cursor(core.list_episodes, episode_cursor, ns)


async def export_bundle(
    core: MemoryCore, ns: Namespace | None, wait_s: float = EXPORT_WAIT_S
) -> dict[str, Any]:
    """Every namespace of the home unless ``ns`` names one, with every acknowledged turn.

    A trace listing made while a restart's journal replay still has turns on disk waits for them
    and then refuses (``deadline_exceeded``) rather than answer without them; export retries it
    for up to ``wait_s`` and then fails, so a backup never silently leaves acknowledged turns out.
    (No ``flush``: that would fire the learner's feedback windows early.)"""

    def dump(items: list[Any]) -> list[dict[str, Any]]:
        return [dataclasses.asdict(i) for i in items]

    give_up = time.monotonic() + max(0.0, wait_s)
    while True:
        try:
            traces = await _all_traces(core, ns)
            break
        except StratamemError as exc:
            if exc.code is not ErrorCode.DEADLINE_EXCEEDED:
                raise
            if time.monotonic() >= give_up:
                raise StratamemError(
                    exc.code,
                    f"export refused, nothing written: acknowledged turns are still being "
                    f"replayed after waiting {wait_s:g}s (--wait): {exc.message}",
                    exc.details,
                ) from exc
            await asyncio.sleep(1.0)
    return {
        "version": BUNDLE_VERSION,
        "exported_at": int(time.time() * 1000),
        "namespace": dataclasses.asdict(ns) if ns is not None else None,
        "traces": dump(traces),
        "episodes": dump(await _all_episodes(core, ns)),
        "policies": dump(await _by_cursor(core.list_policies, learned_cursor, ns)),
        "world_models": dump(await _by_cursor(core.list_world_models, learned_cursor, ns)),
        "skills": dump(await _by_cursor(core.list_skills, learned_cursor, ns)),
    }


def summary(bundle: dict[str, Any]) -> str:
    """What an export holds: counts per kind and the namespaces its traces come from."""
    spaces = sorted({_owner_key(t) for t in bundle["traces"]})
    kinds = ("traces", "episodes", "policies", "world_models", "skills")
    counts = ", ".join(f"{len(bundle[k])} {k.replace('_', ' ')}" for k in kinds)
    return f"exported {counts} from {len(spaces)} namespace(s): {', '.join(spaces) or '-'}"


def _owner_key(trace: dict[str, Any]) -> str:
    owner = trace.get("owner") or {}
    return (
        f"{owner.get('owner_agent_kind') or 'unknown'}/{owner.get('owner_profile_id') or 'default'}"
    )


def _owner_ns(trace: dict[str, Any]) -> Namespace:
    kind, _, profile = _owner_key(trace).partition("/")
    return Namespace(agent_kind=kind, profile_id=profile)


def _user_text(trace: Any) -> str:
    text = trace.get("user_text") if isinstance(trace, dict) else trace.user_text
    return str(text or "") or IMPORTED_TURN


def _same_turn(trace: Any) -> set[tuple[str, str, int, str, str]]:
    """What one captured turn is, whichever home gave it its id: an import into another home
    allocates new ids but keeps the session, the turn's time and the texts. The trace's own time
    is a key too, for copies an older import made (it kept that time, not the turn's)."""
    if isinstance(trace, dict):
        sid, ts, agent = trace.get("session_id"), trace.get("ts"), trace.get("agent_text")
        turn = trace.get("turn_id")
    else:
        sid, ts, agent, turn = trace.session_id, trace.ts, trace.agent_text, trace.turn_id
    texts = (_user_text(trace), str(agent or ""))
    return {
        ("turn", str(sid), int(turn or ts or 0), *texts),
        ("time", str(sid), int(ts or 0), *texts),
    }


def _turn_of(trace: dict[str, Any], ns: Namespace) -> TurnResult:
    calls = tuple(
        ToolCall(
            name=c["name"],
            input=c.get("input"),
            output=c.get("output"),
            error_code=c.get("error_code"),
            tool_call_id=c.get("tool_call_id"),
            started_at=c.get("started_at"),
            ended_at=c.get("ended_at"),
        )
        for c in trace.get("tool_calls") or ()
    )
    return TurnResult(
        agent=ns.agent_kind,
        session_id=str(trace["session_id"]),
        agent_text=str(trace.get("agent_text") or ""),
        # the turn's time: the copy's trace then gets the original's turn and trace times (a tool
        # step and the reply at the same time are spread 1 ms apart again, as they were)
        ts=int(trace.get("turn_id") or trace["ts"]),
        namespace=ns,
        tool_calls=calls,
        reflection=trace.get("reflection"),
        turn_key=f"import:{trace['id']}",
        user_text=_user_text(trace),
    )


async def import_bundle(
    core: MemoryCore, bundle: Any, ns: Namespace | None = None
) -> dict[str, int]:
    """Replay the bundle's traces as captured turns, each into its own owner namespace (or into
    ``ns`` when one is named). Idempotent by id: a trace whose id is already in the home (an export
    imported back) or whose import was already acknowledged (same turn key) is skipped, so the
    counts are exact: ``imported`` new traces, ``skipped`` everything else."""
    if not isinstance(bundle, dict) or bundle.get("version") != BUNDLE_VERSION:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, f"not a version-{BUNDLE_VERSION} Stratamem bundle"
        )
    traces = bundle.get("traces")
    if not isinstance(traces, list):
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, "bundle.traces must be a list")
    known: dict[Namespace, set[Any]] = {}

    async def ids_in(target: Namespace) -> set[Any]:
        """The target namespace's trace ids and turns (see ``_same_turn``)."""
        if target not in known:
            rows = await _all_traces(core, target)
            known[target] = {t.id for t in rows}.union(*(_same_turn(t) for t in rows))
        return known[target]

    imported = skipped = 0
    for t in sorted(
        (t for t in traces if isinstance(t, dict)),
        key=lambda t: (str(t.get("session_id")), int(t.get("ts", 0) or 0)),
    ):
        if not {"id", "session_id", "ts"} <= set(t):
            skipped += 1
            continue
        target = ns or _owner_ns(t)
        have = await ids_in(target)
        if str(t["id"]) in have or not _same_turn(t).isdisjoint(have):
            skipped += 1
            continue
        ack = await core.turn_end(_turn_of(t, target))
        if not ack.trace_id or ack.trace_id in have:
            skipped += 1  # acknowledged before: the import of this trace already ran
            continue
        have |= {ack.trace_id, *_same_turn(t)}
        imported += 1
    skipped += sum(1 for t in traces if not isinstance(t, dict))
    await core.flush()
    return {"imported": imported, "skipped": skipped}


def _named_namespace(args: argparse.Namespace) -> Namespace | None:
    return namespace_of(args) if getattr(args, "namespace", None) else None


@reads_home
@through_service
def run_export(args: argparse.Namespace) -> int:
    if args.out and not (args.out.parent.is_dir() and os.access(args.out.parent, os.W_OK)):
        print(
            f"stratamem: error [invalid_argument] cannot write {args.out}: "
            f"{args.out.parent} is not a writable directory",
            file=sys.stderr,
        )
        return 2

    async def body(core: MemoryCore) -> int:
        bundle = await export_bundle(core, _named_namespace(args), args.wait)
        if args.out:
            text = json.dumps(bundle, ensure_ascii=False, default=str)
            try:
                # 0600: the bundle holds every memory of a home whose own files are 0600
                write_atomic(args.out, text, 0o600)
            except OSError as exc:
                raise StratamemError(
                    ErrorCode.WRITE_FAILED, f"cannot write {args.out}: {exc}"
                ) from exc
            print(f"{summary(bundle)} to {args.out}", file=sys.stderr)
        else:
            print_json(bundle)
            print(summary(bundle), file=sys.stderr)
        return 0

    return run_async(args, body)


def _looks_like_jsonl(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()][:2]
    try:
        return len(lines) > 1 and all(isinstance(json.loads(ln), dict) for ln in lines)
    except json.JSONDecodeError:
        return False


@through_service
def run_import(args: argparse.Namespace) -> int:
    try:
        text = args.file.read_text(encoding="utf-8")
        bundle = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        hint = ""
        if isinstance(exc, json.JSONDecodeError) and _looks_like_jsonl(text):
            hint = (
                f"; it holds one JSON object per line (JSONL turns): use `stratamem ingest "
                f"{args.file}` (import reads a bundle written by `stratamem export`)"
            )
        print(
            f"stratamem: error [invalid_argument] cannot read {args.file}: {exc}{hint}",
            file=sys.stderr,
        )
        return 2

    async def body(core: MemoryCore) -> int:
        print_json(await import_bundle(core, bundle, _named_namespace(args)))
        return 0

    return run_async(args, body)
