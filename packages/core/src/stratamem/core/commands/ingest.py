"""``stratamem ingest FILE.jsonl``: replay recorded turns through routing and capture (no retrieval).

One turn per line (snake_case): ``{"session", "user", "assistant", "ts", "tool_calls"?, "namespace"?}``.
Each line gets a turn key derived from its content, so a re-run skips what was already ingested.
A bad line is reported with its number and skipped; the exit code is non-zero at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import (
    ListQuery,
    Namespace,
    ToolCall,
    TurnInput,
    TurnResult,
    trace_cursor,
)
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.protocol import MemoryCore
from stratamem.core.commands.common import CLI_AGENT, namespace_of, run_async, through_service

_KEYS = {"session", "user", "assistant", "ts", "tool_calls", "namespace"}


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    turn: TurnInput
    result: TurnResult


FORMAT = """\
The file is JSON Lines: one turn (a user message and the assistant's answer) per line.

keys (snake_case; any other key is an error):
  session     string, required   the conversation the turn belongs to
  user        string, required   what the user said (not empty)
  assistant   string             the assistant's answer
  ts          integer, required  when it happened, epoch milliseconds
  tool_calls  list               [{"name", "input"?, "output"?, "error_code"?}, ...]
  namespace   object             {"agent_kind", "profile_id"?}; default: --namespace or cli/default

example (turns.jsonl):
  {"session": "s1", "user": "My sister Alice lives in Lisbon.", "assistant": "Noted.", "ts": 1700000000000}
  {"session": "s2", "user": "Deploy the api", "assistant": "Deployed.", "ts": 1700000100000, "tool_calls": [{"name": "shell", "input": {"cmd": "docker compose up -d"}, "output": "started"}]}

A re-run skips lines already ingested; a bad line is reported by number and skipped (exit 1).
For a bundle written by `stratamem export`, use `stratamem import`."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = FORMAT
    parser.add_argument("file", type=Path, help="JSONL file, one turn per line (format below)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _str(obj: dict[str, Any], key: str, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be a string")
    return value


def _tool_calls(raw: Any) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError("'tool_calls' must be a list")
    calls = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not c["name"].strip():
            raise ValueError(f"tool_calls[{i}] needs a non-empty 'name'")
        err = c.get("error_code")
        if err is not None and not isinstance(err, str):
            raise ValueError(f"tool_calls[{i}].error_code must be a string")
        calls.append(
            ToolCall(name=c["name"], input=c.get("input"), output=c.get("output"), error_code=err)
        )
    return tuple(calls)


def _namespace(raw: Any, default: Namespace) -> Namespace:
    if raw is None:
        return default
    if not isinstance(raw, dict) or not isinstance(raw.get("agent_kind"), str):
        raise ValueError("'namespace' must be {agent_kind, profile_id}")
    profile = raw.get("profile_id", "default")
    if not isinstance(profile, str):
        raise ValueError("'namespace.profile_id' must be a string")
    return Namespace(agent_kind=raw["agent_kind"], profile_id=profile or "default")


def parse_line(number: int, text: str, default_ns: Namespace) -> Line:
    """One JSONL line to a turn; ``ValueError`` says what is wrong with it."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise ValueError("a line must be a JSON object")
    unknown = set(obj) - _KEYS
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}")
    session, user = _str(obj, "session"), _str(obj, "user")
    assistant = _str(obj, "assistant", required=False)
    ts = obj.get("ts")
    if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
        raise ValueError("'ts' must be a non-negative integer (epoch ms)")
    if not session.strip() or not user.strip():
        raise ValueError("'session' and 'user' must not be empty")
    ns = _namespace(obj.get("namespace"), default_ns)
    key = "ingest:" + hashlib.sha256(text.strip().encode()).hexdigest()[:32]
    turn = TurnInput(
        agent=ns.agent_kind or CLI_AGENT,
        session_id=session,
        user_text=user,
        ts=ts,
        namespace=ns,
        turn_key=key,
    )
    result = TurnResult(
        agent=turn.agent,
        session_id=session,
        agent_text=assistant,
        ts=ts,
        namespace=ns,
        tool_calls=_tool_calls(obj.get("tool_calls")),
        turn_key=key,
        user_text=user,
    )
    return Line(number, turn, result)


async def _trace_ids(core: MemoryCore, ns: Namespace) -> set[str]:
    out: set[str] = set()
    after: str | None = None
    while True:
        page = await core.list_traces(ListQuery(limit=500, namespace=ns, after=after))
        out.update(t.id for t in page)
        if len(page) < 500:
            return out
        after = trace_cursor(page[-1])


def _progress(done: int, total: int, enabled: bool) -> None:
    if not enabled or total == 0:
        return
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


@through_service
def run(args: argparse.Namespace) -> int:
    try:
        raw = args.file.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(
            f"stratamem: error [invalid_argument] cannot read {args.file}: {exc}", file=sys.stderr
        )
        return 2
    texts = [(i, t) for i, t in enumerate(raw.splitlines(), 1) if t.strip()]

    async def body(core: MemoryCore) -> int:
        default_ns = namespace_of(args)
        bad = ingested = again = 0
        show = not args.no_progress and sys.stderr.isatty()
        known: dict[Namespace, set[str]] = {}  # trace ids already in each namespace
        for done, (number, text) in enumerate(texts, 1):
            try:
                line = parse_line(number, text, default_ns)
                ns = line.result.namespace or default_ns
                if ns not in known:
                    known[ns] = await _trace_ids(core, ns)
                route = await core.prepare_turn(line.turn)
                ack = await core.turn_end(replace(line.result, episode_id=route.episode_id))
                if ack.trace_id in known[ns]:
                    again += 1  # the line's turn key was acknowledged by an earlier run
                else:
                    known[ns].add(ack.trace_id)
                    ingested += 1
            except (ValueError, StratamemError) as exc:
                bad += 1
                msg = exc.message if isinstance(exc, StratamemError) else str(exc)
                code = exc.code.value if isinstance(exc, StratamemError) else "invalid_argument"
                # a progress bar owns the current line on a terminal; elsewhere no blank lines
                prefix = "\n" if show and done > 1 else ""
                sys.stderr.write(f"{prefix}line {number}: [{code}] {msg}\n")
                if isinstance(exc, StratamemError) and exc.code is ErrorCode.ALREADY_SHUT_DOWN:
                    raise
            _progress(done, len(texts), show)
        await core.flush()
        print(
            f"ingested {ingested} of {len(texts)} lines ({again} already ingested, {bad} bad)",
            file=sys.stderr,
        )
        return 1 if bad else 0

    return run_async(args, body)
