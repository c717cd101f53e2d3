"""Pure step extraction: split an episode's turns into trace steps (one per tool call + the reply)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from stratamem.contract.dtos import ToolCall
from stratamem.core.capture.normalise import truncate_middle


@dataclass(frozen=True, slots=True)
class EpisodeTurn:
    """One turn of an episode: ``role`` is ``user``, ``assistant`` or ``tool`` (with ``tool_call``)."""

    role: str
    text: str = ""
    ts: int = 0
    tool_call: ToolCall | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: str | None = None
    reflection: str | None = None


@dataclass(frozen=True, slots=True)
class Step:
    user_text: str
    agent_text: str
    ts: int
    turn_id: int
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)
    thinking: str | None = None
    reflection: str | None = None
    sub_step: bool = False


def _segments(turns: Sequence[EpisodeTurn]) -> list[list[EpisodeTurn]]:
    segs: list[list[EpisodeTurn]] = []
    for turn in turns:
        starts = turn.role == "user" and (not segs or segs[-1][-1].role != "user")
        if starts or not segs:
            segs.append([])
        segs[-1].append(turn)
    return segs


def _segment_steps(seg: list[EpisodeTurn]) -> list[Step]:
    users = [t for t in seg if t.role == "user"]
    assistants = [t for t in seg if t.role == "assistant"]
    tools = [t for t in seg if t.role == "tool" and t.tool_call is not None]
    if not assistants:
        return []
    user_text = "\n---\n".join(t.text for t in users if t.text)
    turn_id = users[0].ts if users else seg[0].ts
    thinking = "\n\n".join(t.thinking for t in assistants if t.thinking) or None
    reflection = next((t.reflection for t in reversed(assistants) if t.reflection), None)
    if not tools:
        calls = tuple(c for t in assistants for c in t.tool_calls)
        agent = "\n\n".join(t.text for t in assistants if t.text)
        return [Step(user_text, agent, assistants[-1].ts, turn_id, calls, thinking, reflection)]
    out: list[Step] = []
    for i, tool in enumerate(tools):
        assert tool.tool_call is not None
        out.append(
            Step(
                user_text if i == 0 else "",
                "",
                tool.ts,
                turn_id,
                (tool.tool_call,),
                sub_step=True,
            )
        )
    final = next((t for t in reversed(assistants) if t.text and t.text.strip()), None)
    if final is not None:
        out.append(Step("", final.text, final.ts, turn_id, (), thinking, reflection))
    return out


def extract_steps(turns: Sequence[EpisodeTurn]) -> list[Step]:
    """Steps in order with strictly increasing ts (+1 ms de-duplication); ``turn_id`` = first user ts."""
    steps = [s for seg in _segments(turns) for s in _segment_steps(seg)]
    if not steps:
        users = [t for t in turns if t.role == "user" and t.text]
        if users:
            steps = [Step(users[-1].text, "", users[-1].ts, users[-1].ts)]
    out: list[Step] = []
    last = None
    for s in steps:
        ts = s.ts if last is None or s.ts > last else last + 1
        out.append(replace(s, ts=ts) if ts != s.ts else s)
        last = ts
    return out


def _clamp_output(output: object, max_chars: int) -> object:
    if output is None:
        return None
    text = (
        output if isinstance(output, str) else json.dumps(output, default=str, ensure_ascii=False)
    )
    if len(text) <= max_chars:
        return output
    return truncate_middle(text, max_chars)


def normalise_steps(
    steps: Sequence[Step], max_text_chars: int, max_tool_output_chars: int
) -> list[Step]:
    """Clamp texts and tool outputs; drop empty steps and consecutive exact duplicates (not sub-steps)."""
    out: list[Step] = []
    for s in steps:
        calls = tuple(
            replace(c, output=_clamp_output(c.output, max_tool_output_chars)) for c in s.tool_calls
        )
        step = replace(
            s,
            user_text=truncate_middle(s.user_text or "", max_text_chars),
            agent_text=truncate_middle(s.agent_text or "", max_text_chars),
            tool_calls=calls,
        )
        if not step.user_text.strip() and not step.agent_text.strip() and not step.tool_calls:
            continue
        if (
            out
            and not step.sub_step
            and (out[-1].user_text, out[-1].agent_text, out[-1].tool_calls)
            == (step.user_text, step.agent_text, step.tool_calls)
        ):
            continue
        out.append(step)
    return out


def merge_per_turn(steps: Sequence[Step]) -> list[Step]:
    """Lightweight capture: one step per ``turn_id`` (first user text, agent texts, all calls, last ts)."""
    groups: dict[int, list[Step]] = {}
    for s in steps:
        groups.setdefault(s.turn_id, []).append(s)
    out: list[Step] = []
    for turn_id, group in groups.items():
        out.append(
            Step(
                user_text=next((s.user_text for s in group if s.user_text), ""),
                agent_text="\n\n".join(s.agent_text for s in group if s.agent_text),
                ts=group[-1].ts,
                turn_id=turn_id,
                tool_calls=tuple(c for s in group for c in s.tool_calls),
                thinking="\n\n".join(s.thinking for s in group if s.thinking) or None,
                reflection=next((s.reflection for s in reversed(group) if s.reflection), None),
            )
        )
    return out
