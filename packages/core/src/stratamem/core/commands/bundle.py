"""``stratamem export`` / ``stratamem import``: a JSON bundle of a namespace's memories.

Export writes traces, episodes, policies, world models and skills. Import replays each trace as a
captured turn (idempotent per original trace id, original session and time kept); learned layers are
re-derived from the traces by the learning pipeline rather than copied, so they stay consistent.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import ListQuery, Namespace, ToolCall, TurnResult
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.protocol import MemoryCore
from stratamem.core.commands.common import namespace_of, print_json, run_async

EXPORT_HELP = "write a JSON bundle of the namespace's memories to stdout (or --out FILE)"
IMPORT_HELP = "import a JSON bundle written by `stratamem export` (idempotent)"
BUNDLE_VERSION = 1
PAGE = 200


def configure_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, help="file to write (default stdout)")


def configure_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path)


async def _all(fetch: Any, ns: Namespace) -> list[Any]:
    out: list[Any] = []
    offset = 0
    while True:
        page = await fetch(ListQuery(limit=PAGE, offset=offset, namespace=ns))
        out.extend(page)
        if len(page) < PAGE:
            return out
        offset += PAGE


async def export_bundle(core: MemoryCore, ns: Namespace) -> dict[str, Any]:
    def dump(items: list[Any]) -> list[dict[str, Any]]:
        return [dataclasses.asdict(i) for i in items]

    return {
        "version": BUNDLE_VERSION,
        "exported_at": int(time.time() * 1000),
        "namespace": dataclasses.asdict(ns),
        "traces": dump(await _all(core.list_traces, ns)),
        "episodes": dump(await _all(core.list_episodes, ns)),
        "policies": dump(await _all(core.list_policies, ns)),
        "world_models": dump(await _all(core.list_world_models, ns)),
        "skills": dump(await _all(core.list_skills, ns)),
    }


def _turn_of(trace: dict[str, Any], agent: str, ns: Namespace) -> TurnResult:
    calls = tuple(
        ToolCall(
            name=c["name"],
            input=c.get("input"),
            output=c.get("output"),
            error_code=c.get("error_code"),
            tool_call_id=c.get("tool_call_id"),
        )
        for c in trace.get("tool_calls") or ()
    )
    return TurnResult(
        agent=agent,
        session_id=str(trace["session_id"]),
        agent_text=str(trace.get("agent_text") or ""),
        ts=int(trace["ts"]),
        namespace=ns,
        tool_calls=calls,
        reflection=trace.get("reflection"),
        turn_key=f"import:{trace['id']}",
        user_text=str(trace.get("user_text") or "") or "(imported turn)",
    )


async def import_bundle(core: MemoryCore, bundle: Any, ns: Namespace) -> dict[str, int]:
    if not isinstance(bundle, dict) or bundle.get("version") != BUNDLE_VERSION:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, f"not a version-{BUNDLE_VERSION} Stratamem bundle"
        )
    traces = bundle.get("traces")
    if not isinstance(traces, list):
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, "bundle.traces must be a list")
    imported = skipped = 0
    for t in sorted(traces, key=lambda t: (str(t.get("session_id")), int(t.get("ts", 0)))):
        if not isinstance(t, dict) or not {"id", "session_id", "ts"} <= set(t):
            skipped += 1
            continue
        ack = await core.turn_end(_turn_of(t, ns.agent_kind, ns))
        imported += bool(ack.trace_id)
    await core.flush()
    return {"imported": imported, "skipped": skipped}


def run_export(args: argparse.Namespace) -> int:
    async def body(core: MemoryCore) -> int:
        bundle = await export_bundle(core, namespace_of(args))
        if args.out:
            args.out.write_text(json.dumps(bundle, ensure_ascii=False, default=str))
            print(f"wrote {len(bundle['traces'])} traces to {args.out}", file=sys.stderr)
        else:
            print_json(bundle)
        return 0

    return run_async(args, body)


def run_import(args: argparse.Namespace) -> int:
    try:
        bundle = json.loads(args.file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(
            f"stratamem: error [invalid_argument] cannot read {args.file}: {exc}", file=sys.stderr
        )
        return 2

    async def body(core: MemoryCore) -> int:
        print_json(await import_bundle(core, bundle, namespace_of(args)))
        return 0

    return run_async(args, body)
