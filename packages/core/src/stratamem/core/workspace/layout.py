"""Where a root keeps its layered files: Stratamem's ``.stratamem/memory/`` or a host's own layout.

OpenClaw keeps ``MEMORY.md`` and ``DREAMS.md`` at the workspace root and ``memory/YYYY-MM-DD.md``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from stratamem.core.workspace.errors import invalid

LONG_TERM_FILENAME = "MEMORY.md"
DREAMS_FILENAME = "DREAMS.md"


@dataclass(frozen=True, slots=True)
class WorkspaceLayout:
    """Directories (relative to the root, ``""`` is the root itself) of the three kinds of file.

    ``aliases`` are other names a host accepts for a file (OpenClaw reads ``memory.md`` when there
    is no ``MEMORY.md``); ``bootstrap`` lists the files created when missing.
    """

    name: str
    long_term_dir: str
    dreams_dir: str
    daily_dir: str
    bootstrap: tuple[str, ...] = (LONG_TERM_FILENAME, DREAMS_FILENAME)
    aliases: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def dir_of(self, name: str) -> str:
        if name == LONG_TERM_FILENAME:
            return self.long_term_dir
        if name == DREAMS_FILENAME:
            return self.dreams_dir
        return self.daily_dir

    def relpath(self, name: str) -> str:
        """Root-relative canonical path of a layered file name."""
        directory = self.dir_of(name)
        return f"{directory}/{name}" if directory else name

    def dirs(self) -> tuple[str, ...]:
        """The distinct non-root directories the layout uses."""
        out: list[str] = []
        for d in (self.long_term_dir, self.dreams_dir, self.daily_dir):
            if d and d not in out:
                out.append(d)
        return tuple(out)

    def aliases_of(self, name: str) -> tuple[str, ...]:
        for canonical, alts in self.aliases:
            if canonical == name:
                return alts
        return ()

    def key(self, root: Path) -> str:
        """16-hex id of (root, layout): where the root's index lives in the home."""
        text = str(root) if self.name == STRATAMEM else f"{self.name}\x00{root}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


STRATAMEM = "stratamem"
OPENCLAW = "openclaw"

STRATAMEM_LAYOUT = WorkspaceLayout(
    STRATAMEM, ".stratamem/memory", ".stratamem/memory", ".stratamem/memory"
)
OPENCLAW_LAYOUT = WorkspaceLayout(
    OPENCLAW,
    long_term_dir="",
    dreams_dir="",
    daily_dir="memory",
    # DREAMS.md belongs to OpenClaw's dreaming: it is served, never created by us
    bootstrap=(LONG_TERM_FILENAME,),
    aliases=((LONG_TERM_FILENAME, ("memory.md",)), (DREAMS_FILENAME, ("dreams.md",))),
)

LAYOUTS: dict[str, WorkspaceLayout] = {STRATAMEM: STRATAMEM_LAYOUT, OPENCLAW: OPENCLAW_LAYOUT}


def get_layout(layout: str | WorkspaceLayout | None) -> WorkspaceLayout:
    """A layout by name (``stratamem`` when ``None``); an unknown name is ``invalid_argument``."""
    if layout is None:
        return STRATAMEM_LAYOUT
    if isinstance(layout, WorkspaceLayout):
        return layout
    found = LAYOUTS.get(layout) if isinstance(layout, str) else None
    if found is None:
        raise invalid("unknown workspace layout", layout=str(layout), known=sorted(LAYOUTS))
    return found
