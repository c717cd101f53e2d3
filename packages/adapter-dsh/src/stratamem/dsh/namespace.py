"""The one namespace resolver recall, capture and tools share (hosts.md §5.3 item 6).

Agent preset → profile, cwd → workspace, DSH session id → session key.
"""

from __future__ import annotations

from dataclasses import dataclass

from stratamem.contract.dtos import Namespace
from stratamem.dsh.host_api import AGENT


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What the plugin tells us about one DSH ``Session`` object."""

    ref: str
    session_id: str
    agent_preset: str = ""
    cwd: str = ""
    profile_id: str = "default"


def resolve_namespace(info: SessionInfo) -> Namespace:
    return Namespace(
        agent_kind=AGENT,
        profile_id=info.agent_preset or info.profile_id or "default",
        workspace_path=info.cwd or None,
        session_key=info.session_id,
    )


def turn_key(session_id: str, turn: int) -> str:
    return f"{session_id}:{turn}"
