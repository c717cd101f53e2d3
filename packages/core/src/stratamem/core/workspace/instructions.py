"""Backend-aware memory instructions for planning, execution and review prompts (seed §3.7, §3.8.4).

Only the ``file`` backend gets an explicit path hint; ``memory_enabled: false`` yields no instructions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from stratamem.core.workspace.layout import (
    LONG_TERM_FILENAME,
    STRATAMEM_LAYOUT,
    WorkspaceLayout,
)
from stratamem.core.workspace.settings import effective_settings

BackendStyle = Literal["disabled", "file", "readonly", "lancedb"]


@dataclass(frozen=True, slots=True)
class MemoryInstructionContext:
    backend_type: BackendStyle
    instruction_path_hint: str | None
    daily_path_hint: str = STRATAMEM_LAYOUT.relpath("YYYY-MM-DD.md")

    @property
    def enabled(self) -> bool:
        return self.backend_type != "disabled"


def resolve_memory_instruction_context(
    settings: Mapping[str, Any] | None = None,
    layout: WorkspaceLayout = STRATAMEM_LAYOUT,
) -> MemoryInstructionContext:
    """disabled → no hint; file → explicit MEMORY.md hint; readonly; lancedb or unknown → generic."""
    eff = effective_settings(settings)
    if eff["memory_enabled"] is False:
        return MemoryInstructionContext("disabled", None)
    kind = eff["memory_backend_type"]
    if kind == "file":
        return MemoryInstructionContext(
            "file", layout.relpath(LONG_TERM_FILENAME), layout.relpath("YYYY-MM-DD.md")
        )
    if kind == "readonly":
        return MemoryInstructionContext("readonly", None)
    return MemoryInstructionContext("lancedb", None)


def _context(arg: MemoryInstructionContext | Mapping[str, Any] | None) -> MemoryInstructionContext:
    if isinstance(arg, MemoryInstructionContext):
        return arg
    return resolve_memory_instruction_context(arg)


def _read_part(ctx: MemoryInstructionContext) -> str:
    if ctx.backend_type == "file":
        return (
            f"Before you start, read the project memory file `{ctx.instruction_path_hint}` "
            f"(daily notes live in `{ctx.daily_path_hint}`)."
        )
    return (
        "Before you start, consult the project memory through the memory tools "
        "(`memory_search` for relevant notes, `memory_get` to read a file)."
    )


def _write_part(ctx: MemoryInstructionContext, what: str) -> str:
    if ctx.backend_type == "readonly":
        return "Project memory is read-only here: do not try to modify it."
    if ctx.backend_type == "file":
        return f"When you finish, append {what} to `{ctx.instruction_path_hint}` under the fitting heading."
    return (
        f"When you finish, record {what} with the `memory_write` tool (the backend decides where)."
    )


def build_planning_memory_instructions(
    settings: MemoryInstructionContext | Mapping[str, Any] | None = None,
) -> str:
    ctx = _context(settings)
    if not ctx.enabled:
        return ""
    return "\n".join(
        [
            "## Project Memory",
            _read_part(ctx),
            "Use recorded architecture, conventions and pitfalls to shape the plan.",
            _write_part(ctx, "durable planning decisions (not task progress)"),
        ]
    )


def build_execution_memory_instructions(
    settings: MemoryInstructionContext | Mapping[str, Any] | None = None,
) -> str:
    ctx = _context(settings)
    if not ctx.enabled:
        return ""
    return "\n".join(
        [
            "## Project Memory",
            _read_part(ctx),
            _write_part(
                ctx, "durable learnings (conventions, pitfalls, context) — keep it concise"
            ),
        ]
    )


def build_reviewer_memory_instructions(
    settings: MemoryInstructionContext | Mapping[str, Any] | None = None,
) -> str:
    ctx = _context(settings)
    if not ctx.enabled:
        return ""
    lines = [
        "## Project Memory",
        _read_part(ctx),
        "Check the change against recorded conventions and pitfalls.",
    ]
    if ctx.backend_type == "readonly":
        lines.append(_write_part(ctx, ""))
    return "\n".join(lines)


def append_memory_instructions(prompt: str, section: str) -> str:
    """Append a memory section to a prompt; the prompt before it is never altered."""
    if not section:
        return prompt
    return f"{prompt}\n\n{section}" if prompt else section
