"""Test helpers: the real core behind test-controlled gates, and a fake DSH host that spools turns
exactly as the plugin's ``turn/end`` listener does (hosts.md §5.7)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from stratamem.core import LocalCore
from stratamem.dsh.bridge import DshBridge
from stratamem.dsh.namespace import SessionInfo, turn_key
from stratamem.dsh.spool import open_spool


class GatedCore:
    """The real core with test-controlled latency in front of chosen calls (not a stand-in)."""

    def __init__(self, core: LocalCore) -> None:
        self._core = core
        self.gates: dict[str, asyncio.Event] = {}
        self.delays: dict[str, float] = {}
        self.calls: list[str] = []
        self.args: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._core, name)
        if not asyncio.iscoroutinefunction(target):
            return target

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            self.args.append((name, args))
            if name in self.delays:
                await asyncio.sleep(self.delays[name])  # a provider that ignores cancellation
            gate = self.gates.get(name)
            if gate is not None:
                await gate.wait()
            return await target(*args, **kwargs)

        return call


class FakeDsh:
    """Plays a DSH session: builds events, spools completed turns like the plugin's listener."""

    def __init__(self, bridge: DshBridge, home: Path) -> None:
        self.bridge = bridge
        self.home = home
        self.spooled: set[tuple[str, int]] = set()

    def spool_turn(
        self,
        info: SessionInfo,
        turn: int,
        user_text: str,
        events: list[dict[str, Any]],
        *,
        reason: str = "completed",
    ) -> bool:
        """The turn/end listener: dedupe per Session object, then a synchronous fsync'd spool write."""
        if (info.ref, turn) in self.spooled:
            return False
        self.spooled.add((info.ref, turn))
        now = int(time.time() * 1000)
        open_spool(self.home).put(
            {
                "v": 1,
                "key": turn_key(info.session_id, turn),
                "session": {
                    "ref": info.ref,
                    "session_id": info.session_id,
                    "agent_preset": info.agent_preset,
                    "cwd": info.cwd,
                    "profile_id": info.profile_id,
                },
                "turn": turn,
                "user_text": user_text,
                "started_at": now - 50,
                "ended_at": now,
                "reason": reason,
                "events": events,
            },
        )
        self.bridge.poll_spool()
        return True


def assistant(text: str, turn: int = 1) -> dict[str, Any]:
    return {
        "type": "assistant/message",
        "seq": 2,
        "time": 120,
        "data": {
            "turn": turn,
            "step": 1,
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        },
    }


def tool_call(call_id: str, name: str, args: str, time_ms: int = 130) -> dict[str, Any]:
    return {
        "type": "tool/call",
        "seq": 3,
        "time": time_ms,
        "data": {"turn": 1, "step": 1, "callId": call_id, "name": name, "arguments": args},
    }


def tool_result(
    call_id: str, text: str, *, is_error: bool = False, time_ms: int = 140, surface: Any = "append"
) -> dict[str, Any]:
    return {
        "type": "tool/result",
        "seq": 4,
        "time": time_ms,
        "surfaceOp": surface,
        "data": {
            "turn": 1,
            "step": 1,
            "message": {
                "source": {"kind": "tool", "callId": call_id},
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": call_id,
                        "content": [{"type": "text", "text": text}],
                        "isError": is_error,
                    }
                ],
            },
        },
    }
