"""``stratamem dsh install``: the plugin installed under the DSH home (its JS files, the compiled
``dsh.proto`` it loads, its npm dependencies) and the DSH bundle patch that inserts its Cordis row
(hosts.md §5.1).

DSH patch layers replace a row's whole ``config``, so the row carries every key with its default.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit import jsplugin, tools
from stratamem.dsh.host_api import PLUGIN_NAME

#: the Cordis row's config with the reference defaults (memos-core §6.3), plus our own keys
DEFAULT_CONFIG: dict[str, Any] = {
    "enabled": True,
    "profileId": "default",
    "home": "",
    "recallEnabled": True,
    "captureEnabled": True,
    "toolsEnabled": True,
    "hostLlmEnabled": True,
    "viewerEnabled": True,
    "viewerPort": 18801,
    "recallTimeoutMs": 3000,
    "contextMaxChars": 6000,
    "toolResultMaxChars": 1200,
    "failOnStartupError": False,
    "command": "stratamem",
    "startupTimeoutMs": 30000,
    "drainTimeoutMs": 4000,
}


#: the compiled dsh.proto the plugin's grpc.mjs loads
DESCRIPTOR_NAME = "dsh.desc"
#: the host kit's memory tool definitions the plugin's tools.mjs registers
TOOLS_NAME = "memory-tools.json"


def plugin_entry() -> Path:
    """The plugin module shipped inside this package (installed from here, run from the DSH home)."""
    return Path(__file__).resolve().parent / "js" / "index.mjs"


def plugin_dir(dsh_home: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    return resolve_dsh_home(dsh_home, env) / "stratamem" / "plugin"


def plugin_files() -> dict[str, bytes]:
    from stratamem.hosts.dsh.v1 import dsh_pb2

    src = plugin_entry().parent
    files = {p.name: p.read_bytes() for p in sorted(src.iterdir()) if p.suffix in (".mjs", ".json")}
    files[DESCRIPTOR_NAME] = jsplugin.descriptor_set(dsh_pb2)
    files[TOOLS_NAME] = (json.dumps(tools.definitions(), indent=1) + "\n").encode()
    return files


def install_plugin(
    target: Path, *, run_npm: bool = True, npm: str | None = None, dry_run: bool = False
) -> list[str]:
    """Copy the plugin to ``target`` with its schema and npm dependencies; returns what changed."""
    changes = jsplugin.sync_files(target, plugin_files(), dry_run=dry_run)
    if run_npm and jsplugin.needs_npm(target, changes):
        changes.append(f"npm install in {target}")
        if not dry_run:
            jsplugin.npm_install(target, npm)
    return changes


def resolve_dsh_home(explicit: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = explicit or env.get("DSH_HOME") or "~/.dsh"
    return Path(base).expanduser().absolute()


def bundle_patch(
    *,
    dsh_home: str | None = None,
    profile: str = "default",
    command: str | None = None,
    env: Mapping[str, str] | None = None,
    plugin: Path | None = None,
) -> str:
    """The YAML patch (JSON scalars are valid YAML, so no YAML library is needed)."""
    if not profile or any(c in profile for c in "/\\\n"):
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, "profile must be a plain name", {"field": "profile"}
        )
    home = resolve_dsh_home(dsh_home, env) / "stratamem"
    config = dict(DEFAULT_CONFIG, profileId=profile, home=str(home))
    if command:
        config["command"] = command
    lines = [
        f"# Stratamem memory plugin for DSH profile {json.dumps(profile)}.",
        f"# Apply: dsh plugin --profile {profile} patch <this file>; home {home}",
        "insert:",
        f"  - id: {json.dumps(PLUGIN_NAME)}",
        f"    name: {json.dumps(str(plugin or plugin_dir(dsh_home, env) / plugin_entry().name))}",
        "    config:",
    ]
    lines += [f"      {key}: {json.dumps(value)}" for key, value in config.items()]
    return "\n".join(lines) + "\n"


def write_patch(patch: str, path: str | os.PathLike[str]) -> Path:
    target = Path(path).expanduser().absolute()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(patch, encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        raise StratamemError(
            ErrorCode.PATH_NOT_WRITABLE, f"cannot write {target}: {exc}", {"path": str(target)}
        ) from exc
    return target
