"""``stratamem openclaw install|uninstall``: put the JS plugin into ``<openclaw-home>/extensions``,
install its npm dependencies, and edit ``openclaw.json`` (JSON5, comments kept) so OpenClaw loads
it in the memory slot with conversation access. Idempotent; reports every change.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit import jsplugin, tools
from stratamem.contract.hostkit.files import mode_of, write_atomic
from stratamem.contract.hostkit.home import socket_path_for
from stratamem.openclaw.json5edit import Json5Document

PLUGIN_ID = "stratamem"
PLUGIN_FILES = ("index.js", "openclaw.plugin.json", "package.json")
DESCRIPTOR_NAME = "proto/openclaw.desc"
MARKER = ".stratamem-managed"
WORKSPACE_TOOLS = "workspace-tools.json"
#: the host kit's six memory tool definitions, which the plugin registers
MEMORY_TOOLS = "memory-tools.json"


@dataclass
class Report:
    openclaw_home: str
    plugin_dir: str
    stratamem_home: str
    dry_run: bool
    changes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "openclaw_home": self.openclaw_home,
            "plugin_dir": self.plugin_dir,
            "stratamem_home": self.stratamem_home,
            "dry_run": self.dry_run,
            "changed": bool(self.changes),
            "changes": list(self.changes),
        }


def openclaw_home_of(explicit: str | os.PathLike[str] | None) -> Path:
    return Path(explicit or "~/.openclaw").expanduser().absolute()


def descriptor_bytes() -> bytes:
    """The compiled ``stratamem.openclaw.v1`` schema the JS plugin loads (no drift from proto/)."""
    from stratamem.hosts.openclaw.v1 import openclaw_pb2

    return jsplugin.descriptor_set(openclaw_pb2)


def serve_command() -> list[str]:
    """Absolute argv of ``stratamem serve`` for the interpreter running this install."""
    script = Path(sys.executable).parent / "stratamem"
    if script.exists():
        return [str(script), "serve"]
    found = shutil.which("stratamem")
    if found:
        return [str(Path(found).absolute()), "serve"]
    return [sys.executable, "-m", "stratamem.core.cli", "serve"]


def start_command(home: Path) -> list[str]:
    """Absolute argv that makes ``home``'s resident service answer (started on demand, detached):
    the thin-client helper every Stratamem client uses, run by this install's interpreter."""
    return [sys.executable, "-m", "stratamem.contract.hostkit.client", "--home", str(home)]


def socket_for(home: Path) -> str:
    return str(socket_path_for(home))


def plugin_files() -> dict[str, bytes]:
    """The plugin as installed: the JS files, the compiled schema, the workspace tool list
    (and their names added to the manifest's ``contracts.tools``)."""
    from stratamem.openclaw.workspace import tool_definitions

    root = resources.files("stratamem.openclaw") / "js"
    files = {name: (root / name).read_bytes() for name in PLUGIN_FILES}
    files[DESCRIPTOR_NAME] = descriptor_bytes()
    workspace_tools = tool_definitions()
    files[WORKSPACE_TOOLS] = (json.dumps(workspace_tools, indent=2) + "\n").encode()
    files[MEMORY_TOOLS] = (json.dumps(tools.definitions(), indent=2) + "\n").encode()
    manifest = json.loads(files["openclaw.plugin.json"])
    names = manifest.setdefault("contracts", {}).setdefault("tools", [])
    names += [t["name"] for t in workspace_tools if t["name"] not in names]
    files["openclaw.plugin.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    return files


def _config_path(home: Path) -> Path:
    return home / "openclaw.json"


def _read_config(home: Path) -> tuple[Path, Json5Document, str]:
    path = _config_path(home)
    try:
        original = path.read_text(encoding="utf-8") if path.exists() else ""
    except OSError as exc:
        raise StratamemError(ErrorCode.READ_FAILED, f"cannot read {path}: {exc}") from exc
    return path, Json5Document(original), original


def install(
    openclaw_home: str | os.PathLike[str] | None = None,
    *,
    dry_run: bool = False,
    run_npm: bool = True,
    npm: str | None = None,
) -> Report:
    home = openclaw_home_of(openclaw_home)
    plugin_dir = home / "extensions" / PLUGIN_ID
    st_home = home / "stratamem"
    report = Report(str(home), str(plugin_dir), str(st_home), dry_run)
    # plan the config first: a broken openclaw.json stops everything before any write
    cfg_path, doc, original = _read_config(home)
    entry = ("plugins", "entries", PLUGIN_ID)
    edits: list[tuple[str, bool]] = [
        (
            "plugins.enabled = true",
            doc.get("plugins", "enabled") is None and doc.set(("plugins", "enabled"), True),
        ),
        (f"plugins.allow += {PLUGIN_ID}", doc.add_to_array(("plugins", "allow"), PLUGIN_ID)),
        (
            f"plugins.load.paths += {plugin_dir}",
            doc.add_to_array(("plugins", "load", "paths"), str(plugin_dir)),
        ),
        (f"plugins.slots.memory = {PLUGIN_ID}", doc.set(("plugins", "slots", "memory"), PLUGIN_ID)),
        (f"{'.'.join(entry)}.enabled = true", doc.set((*entry, "enabled"), True)),
        (
            "hooks.allowConversationAccess = true",
            doc.set((*entry, "hooks", "allowConversationAccess"), True),
        ),
        (
            "hooks.allowPromptInjection = true",
            doc.set((*entry, "hooks", "allowPromptInjection"), True),
        ),
        (f"config.home = {st_home}", doc.set((*entry, "config", "home"), str(st_home))),
        ("config.socket", doc.set((*entry, "config", "socket"), socket_for(st_home))),
        ("config.serveCommand", doc.set((*entry, "config", "serveCommand"), serve_command())),
        (
            "config.startCommand",
            doc.set((*entry, "config", "startCommand"), start_command(st_home)),
        ),
    ]
    report.changes += [f"openclaw.json: {what}" for what, changed in edits if changed]
    report.changes += jsplugin.sync_files(plugin_dir, plugin_files(), dry_run=dry_run)
    if not dry_run:
        (plugin_dir / MARKER).touch()
        st_home.mkdir(parents=True, exist_ok=True, mode=0o700)
    if run_npm and jsplugin.needs_npm(plugin_dir, report.changes):
        report.changes.append(f"npm install in {plugin_dir}")
        if not dry_run:
            jsplugin.npm_install(plugin_dir, npm)
    if doc.text != original and not dry_run:
        # the original's mode (it holds API keys and the gateway token), 0600 for a new file
        mode = mode_of(cfg_path, 0o600)
        if original and not (cfg_path.with_name("openclaw.json.stratamem.bak")).exists():
            write_atomic(cfg_path.with_name("openclaw.json.stratamem.bak"), original, mode)
        write_atomic(cfg_path, doc.text, mode)
    return report


def uninstall(
    openclaw_home: str | os.PathLike[str] | None = None, *, dry_run: bool = False
) -> Report:
    home = openclaw_home_of(openclaw_home)
    plugin_dir = home / "extensions" / PLUGIN_ID
    report = Report(str(home), str(plugin_dir), str(home / "stratamem"), dry_run)
    cfg_path, doc, original = _read_config(home)
    edits = [
        (f"plugins.allow -= {PLUGIN_ID}", doc.remove_from_array(("plugins", "allow"), PLUGIN_ID)),
        (
            "plugins.load.paths -= plugin",
            doc.remove_from_array(("plugins", "load", "paths"), str(plugin_dir)),
        ),
        (f"plugins.entries.{PLUGIN_ID} removed", doc.delete(("plugins", "entries", PLUGIN_ID))),
    ]
    if doc.get("plugins", "slots", "memory") == PLUGIN_ID:
        edits.append(("plugins.slots.memory removed", doc.delete(("plugins", "slots", "memory"))))
    report.changes += [f"openclaw.json: {what}" for what, changed in edits if changed]
    if plugin_dir.exists():
        report.changes.append(f"remove {plugin_dir}")
        if not dry_run:
            if not (plugin_dir / MARKER).exists():
                raise StratamemError(
                    ErrorCode.CONFLICT,
                    f"{plugin_dir} was not installed by stratamem; not removing it",
                )
            shutil.rmtree(plugin_dir)
    if doc.text != original and not dry_run:
        write_atomic(cfg_path, doc.text, mode_of(cfg_path, 0o600))
    return report
