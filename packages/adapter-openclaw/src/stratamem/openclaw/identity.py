"""Stable OpenClaw identities: the session id (keyed on sessionKey, which survives /new) and namespace."""

from __future__ import annotations

import hashlib

from stratamem.contract.dtos import Namespace

AGENT_KIND = "openclaw"


def session_id_for(agent_id: str | None, session_key: str | None) -> str:
    """``openclaw::<agentId>::<sessionKey>``; OpenClaw's own sessionId changes on /new and /reset."""
    return f"openclaw::{agent_id or 'main'}::{session_key or 'default'}"


def workspace_id_for(workspace_dir: str | None) -> str | None:
    """A short stable id of a workspace path (``None`` without one)."""
    if not workspace_dir:
        return None
    return "ws-" + hashlib.sha256(workspace_dir.encode("utf-8")).hexdigest()[:12]


def namespace_for(
    agent_id: str | None, workspace_dir: str | None, session_key: str | None
) -> Namespace:
    """Owner namespace: agent kind ``openclaw``, profile = agent id, plus workspace and session key."""
    return Namespace(
        agent_kind=AGENT_KIND,
        profile_id=agent_id or "main",
        workspace_id=workspace_id_for(workspace_dir),
        workspace_path=workspace_dir or None,
        session_key=session_key or None,
    )
