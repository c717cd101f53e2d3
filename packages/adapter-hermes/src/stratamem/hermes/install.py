"""``stratamem hermes install|uninstall``: the user-plugin folder Hermes 0.19 discovers + config.yaml.

Hermes only loads ``$HERMES_HOME/plugins/<name>/`` whose ``__init__.py`` mentions ``MemoryProvider`` in
its first 8 KB; ``memory.provider`` in ``config.yaml`` picks it. Both edits are idempotent and reversible.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.files import mode_of, write_atomic

PLUGIN_NAME = "stratamem"
#: Marker in the files we write, so uninstall never deletes a folder we did not create.
MARKER = "installed by `stratamem hermes install`"

PLUGIN_INIT = f'''"""Stratamem long-term memory for Hermes ({MARKER}).

A thin shim: the MemoryProvider lives in the ``stratamem-hermes`` package
(``stratamem.hermes.provider.StratamemMemoryProvider``, a ``MemoryProvider`` subclass).
"""

from stratamem.hermes.hermes_plugin import StratamemMemoryProvider, register

__all__ = ["StratamemMemoryProvider", "register"]
'''

PLUGIN_YAML = f"""# {MARKER}
name: {PLUGIN_NAME}
version: "0.1.0"
description: "Stratamem: long-term memory that learns from what the agent does (local, offline)."
kind: exclusive
pip_dependencies: []
requires_env: []
hooks:
  - on_turn_start
  - on_session_end
  - on_pre_compress
  - on_delegation
  - on_memory_write
"""


@dataclass
class InstallReport:
    hermes_home: Path
    plugin_dir: Path
    config_path: Path
    changed: list[str] = field(default_factory=list)
    python: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "hermes_home": str(self.hermes_home),
            "plugin_dir": str(self.plugin_dir),
            "config": str(self.config_path),
            "changed": list(self.changed),
            "python": self.python,
        }


def resolve_hermes_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--hermes-home``, else ``$HERMES_HOME``, else ``~/.hermes``."""
    if explicit:
        return Path(explicit).expanduser().absolute()
    env = os.environ.get("HERMES_HOME")
    return Path(env).expanduser().absolute() if env else Path("~/.hermes").expanduser().absolute()


def hermes_python() -> str:
    """The interpreter Hermes runs on: the one behind the ``hermes`` script, else ours."""
    script = shutil.which("hermes")
    if script:
        try:
            first = Path(script).read_text(encoding="utf-8", errors="replace").splitlines()[0]
        except (OSError, IndexError):
            first = ""
        if first.startswith("#!"):
            candidate = first[2:].strip().split()[0]
            if candidate and Path(candidate).exists():
                return candidate
    return sys.executable


def check_importable(python: str) -> None:
    """``stratamem.hermes.provider`` must import from Hermes' interpreter (needs Hermes itself)."""
    code = "import stratamem.hermes.provider as p; assert issubclass(p.StratamemMemoryProvider, p.MemoryProvider)"
    try:
        done = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"cannot run Hermes' interpreter {python}: {exc}",
            {"python": python},
        ) from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"stratamem.hermes does not import from Hermes' interpreter {python}; "
            "install stratamem-hermes into the same environment as hermes-agent",
            {"python": python, "error": "\n".join(tail)},
        )


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML()  # round-trip: keeps comments, order and quoting
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _load_config(path: Path) -> Any:
    from ruamel.yaml.comments import CommentedMap

    if not path.exists():
        return CommentedMap()
    try:
        data = _yaml().load(path.read_text(encoding="utf-8"))
    except Exception as exc:
        raise StratamemError(
            ErrorCode.CONFIG_INVALID, f"{path} is not valid YAML: {exc}", {"path": str(path)}
        ) from exc
    if data is None:
        return CommentedMap()
    if not isinstance(data, dict):
        raise StratamemError(
            ErrorCode.CONFIG_INVALID, f"{path} must hold a mapping", {"path": str(path)}
        )
    return data


def _dump_config(path: Path, data: Any) -> None:
    buf = io.StringIO()
    _yaml().dump(data, buf)
    _atomic_write(path, buf.getvalue(), new_mode=0o600)


def _atomic_write(path: Path, text: str, new_mode: int = 0o644) -> None:
    """Replace ``path`` keeping its mode (``new_mode`` when new: 0600 for ``config.yaml``, which
    Hermes keeps so as it holds API keys)."""
    try:
        write_atomic(path, text, mode_of(path, new_mode))
    except OSError as exc:
        raise StratamemError(
            ErrorCode.CONFIG_WRITE_FAILED, f"cannot write {path}: {exc}", {"path": str(path)}
        ) from exc


def install(
    hermes_home: str | os.PathLike[str] | None = None,
    *,
    python: str | None = None,
    check_import: bool = True,
) -> InstallReport:
    """Write the plugin folder and select the provider; a second run changes nothing."""
    from ruamel.yaml.comments import CommentedMap

    home = resolve_hermes_home(hermes_home)
    report = InstallReport(home, home / "plugins" / PLUGIN_NAME, home / "config.yaml")
    if home.exists() and not home.is_dir():
        raise StratamemError(
            ErrorCode.CONFIG_INVALID, f"{home} is not a directory", {"hermes_home": str(home)}
        )
    config = _load_config(report.config_path)  # validate before touching anything
    memory = config.get("memory")
    if memory is not None and not isinstance(memory, dict):
        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"{report.config_path}: `memory` must be a mapping",
            {"path": str(report.config_path)},
        )
    report.python = python or hermes_python()
    if check_import:
        check_importable(report.python)

    for fname, text in (("__init__.py", PLUGIN_INIT), ("plugin.yaml", PLUGIN_YAML)):
        target = report.plugin_dir / fname
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            _atomic_write(target, text)
            report.changed.append(str(target))

    if memory is None:
        memory = CommentedMap()
        config["memory"] = memory
    if memory.get("provider") != PLUGIN_NAME:
        memory["provider"] = PLUGIN_NAME
        _dump_config(report.config_path, config)
        report.changed.append(str(report.config_path))
    return report


def uninstall(hermes_home: str | os.PathLike[str] | None = None) -> InstallReport:
    """Remove our plugin folder and unselect the provider; the rest of config.yaml stays."""
    home = resolve_hermes_home(hermes_home)
    report = InstallReport(home, home / "plugins" / PLUGIN_NAME, home / "config.yaml")
    if report.config_path.exists():
        config = _load_config(report.config_path)
        memory = config.get("memory")
        if isinstance(memory, dict) and memory.get("provider") == PLUGIN_NAME:
            del memory["provider"]
            if not memory:
                del config["memory"]
            _dump_config(report.config_path, config)
            report.changed.append(str(report.config_path))
    init = report.plugin_dir / "__init__.py"
    if report.plugin_dir.is_dir():
        ours = init.exists() and MARKER in init.read_text(encoding="utf-8", errors="replace")
        if not ours:
            raise StratamemError(
                ErrorCode.CONFLICT,
                f"{report.plugin_dir} was not written by stratamem; left in place",
                {"plugin_dir": str(report.plugin_dir)},
            )
        shutil.rmtree(report.plugin_dir)
        report.changed.append(str(report.plugin_dir))
    return report
