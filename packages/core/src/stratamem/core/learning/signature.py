"""Signatures that bucket experience (memos-core §5.4 step 3, §5.5 step 2).

A trace's ``primaryTag|secondaryTag|tool|errCode``; a policy's L3 domain key ``primary|tool``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_ERR_CODE = re.compile(r"\b[A-Z][A-Z0-9_]{2,}_[A-Z0-9_]+\b")
_EXIT = re.compile(r"exit(?:ed with)? code:? ?(-?\d+)", re.I)


def tool_names(row: Mapping[str, Any]) -> list[str]:
    try:
        calls = json.loads(row.get("tool_calls_json") or "[]")
    except ValueError:
        return []
    return [str(c.get("name") or "") for c in calls if isinstance(c, dict) and c.get("name")]


def tool_outputs(row: Mapping[str, Any]) -> str:
    try:
        calls = json.loads(row.get("tool_calls_json") or "[]")
    except ValueError:
        return ""
    parts = []
    for c in calls if isinstance(calls, list) else []:
        if isinstance(c, dict):
            out = c.get("output")
            parts.append(out if isinstance(out, str) else json.dumps(out, default=str))
            if c.get("error_code"):
                parts.append(str(c["error_code"]))
    return "\n".join(parts)


def action_text(row: Mapping[str, Any], cap: int = 300) -> str:
    """What a step did: its reply, else its tool calls as ``name(input) -> output``."""
    text = str(row.get("agent_text") or "").strip()
    if text:
        return text[:cap]
    try:
        calls = json.loads(row.get("tool_calls_json") or "[]")
    except ValueError:
        return ""
    parts = []
    for c in calls if isinstance(calls, list) else []:
        if isinstance(c, dict) and c.get("name"):
            inp = c.get("input")
            out = c.get("output")
            inp_s = inp if isinstance(inp, str) else json.dumps(inp, default=str)
            out_s = out if isinstance(out, str) else json.dumps(out, default=str)
            parts.append(f"{c['name']}({inp_s[:150]}) -> {out_s[:120]}")
    return "; ".join(parts)[:cap]


def error_code(row: Mapping[str, Any]) -> str:
    for text in (tool_outputs(row), str(row.get("reflection") or "")):
        m = _ERR_CODE.search(text)
        if m:
            return m.group(0)
        e = _EXIT.search(text)
        if e:
            return f"EXIT_{e.group(1)}"
    return "_"


def trace_signature(row: Mapping[str, Any]) -> str:
    tags = [str(t).lower() for t in (row.get("tags") or []) if t and t != "lightweight_memory"]
    tools = tool_names(row)
    primary = tags[0] if tags else "_"
    secondary = tags[1] if len(tags) > 1 else "_"
    tool = tools[0].lower()[:64] if tools else "_"
    return "|".join((primary, secondary, tool, error_code(row)))


_PRIMARY = [
    ("docker", r"docker|container|podman"),
    ("alpine", r"alpine|musl"),
    ("node", r"\bnode\b|npm|yarn|pnpm"),
    ("python", r"python|\bpip\b|poetry|conda"),
    ("rust", r"\brust\b|cargo"),
    ("go", r"\bgolang\b|\bgo (?:build|mod|test)\b"),
    ("java", r"\bjava\b|maven|gradle"),
    ("db", r"postgres|mysql|sqlite|redis"),
    ("sec13f", r"13f|\bsec\b filing"),
    ("network", r"network|\bdns\b|proxy|\btls\b|https?\b"),
    ("git", r"\bgit\b|github|gitlab"),
    ("k8s", r"kubernetes|k8s|helm"),
    ("cloud", r"\baws\b|\bgcp\b|azure"),
]
_TOOL = [
    ("pip", r"\bpip\b"),
    ("npm", r"\bnpm\b"),
    ("yarn", r"\byarn\b"),
    ("cargo", r"\bcargo\b"),
    ("sysdep", r"\bapt(?:-get)?\b|\bapk\b|\byum\b"),
    ("docker-cli", r"\bdocker (?:build|run|compose|push|pull)\b"),
    ("git-cli", r"\bgit (?:clone|push|pull|commit|rebase|merge)\b"),
    ("sec-tooling", r"edgar"),
]


def domain_key(text: str) -> str:
    t = text.lower()
    primary = next((name for name, pat in _PRIMARY if re.search(pat, t)), "_")
    tool = next((name for name, pat in _TOOL if re.search(pat, t)), "_")
    return f"{primary}|{tool}"
