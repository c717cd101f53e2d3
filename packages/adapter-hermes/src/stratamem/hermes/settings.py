"""Adapter settings: prefetch budget (6 s default, capped at 7 s under Hermes' 8 s cut-off) and homes.

Read from ``$STRATAMEM_HOME``/``$HERMES_HOME/stratamem`` + ``hermes.yaml`` there; env overrides.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError

DEFAULT_BUDGET_S = 6.0
MAX_BUDGET_S = 7.0
MIN_BUDGET_S = 0.5
#: Time kept back from the budget for assembling the answer (the core's deadline is earlier).
RESERVE_S = 0.25
SETTINGS_FILE = "hermes.yaml"
BUDGET_ENV = "STRATAMEM_HERMES_PREFETCH_BUDGET_S"


@dataclass(frozen=True)
class HermesSettings:
    hermes_home: Path
    home: Path
    prefetch_budget_s: float = DEFAULT_BUDGET_S
    sync_timeout_s: float = 60.0
    #: opt-in: see README ("Hermes' model as the core's LLM") for why it is off by default
    lend_llm: bool = False


def clamp_budget(value: Any) -> float:
    """A number of seconds, capped at 7 s; anything else is ``config_invalid``."""
    try:
        budget = float(value)
    except (TypeError, ValueError) as exc:
        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"prefetch_budget_s must be a number of seconds, got {value!r}",
            {"key": "prefetch_budget_s"},
        ) from exc
    if not budget == budget or budget <= 0:  # NaN or non-positive
        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"prefetch_budget_s must be > 0, got {value!r}",
            {"key": "prefetch_budget_s"},
        )
    return max(MIN_BUDGET_S, min(MAX_BUDGET_S, budget))


def stratamem_home(
    hermes_home: str | os.PathLike[str], env: Mapping[str, str] | None = None
) -> Path:
    """``$STRATAMEM_HOME`` if set, else ``<hermes_home>/stratamem`` (DESIGN.md §2)."""
    from stratamem.contract.hostkit.home import resolve_home

    env = os.environ if env is None else env
    merged = {k: v for k, v in env.items() if k == "STRATAMEM_HOME"}
    merged["HERMES_HOME"] = str(hermes_home)
    return resolve_home(None, host="hermes", env=merged)


def _read_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    from ruamel.yaml import YAML

    try:
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except Exception as exc:
        raise StratamemError(
            ErrorCode.CONFIG_INVALID, f"{path} is not valid YAML: {exc}", {"path": str(path)}
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise StratamemError(
            ErrorCode.CONFIG_INVALID, f"{path} must hold a mapping", {"path": str(path)}
        )
    return data


def load_settings(
    hermes_home: str | os.PathLike[str], env: Mapping[str, str] | None = None
) -> HermesSettings:
    env = os.environ if env is None else env
    hh = Path(hermes_home).expanduser().absolute()
    home = stratamem_home(hh, env)
    values = _read_file(home / SETTINGS_FILE)
    budget = clamp_budget(env.get(BUDGET_ENV) or values.get("prefetch_budget_s", DEFAULT_BUDGET_S))
    lend = values.get("lend_llm", False)
    if not isinstance(lend, bool):
        raise StratamemError(
            ErrorCode.CONFIG_INVALID, "lend_llm must be true or false", {"key": "lend_llm"}
        )
    return HermesSettings(hermes_home=hh, home=home, prefetch_budget_s=budget, lend_llm=lend)


CONFIG_SCHEMA: list[dict[str, Any]] = [
    {
        "key": "prefetch_budget_s",
        "description": "Seconds recall may take before each turn (capped at 7; Hermes cuts at 8)",
        "default": DEFAULT_BUDGET_S,
        "required": False,
        "secret": False,
    },
    {
        "key": "lend_llm",
        "description": "Let Stratamem use Hermes' model when it has no LLM of its own",
        "default": False,
        "choices": [True, False],
        "required": False,
        "secret": False,
    },
]


def save_settings(values: Mapping[str, Any], hermes_home: str | os.PathLike[str]) -> Path:
    """Validate everything first, then write ``hermes.yaml`` (0600, comments preserved)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

    known = {field["key"] for field in CONFIG_SCHEMA}
    unknown = sorted(set(values) - known)
    if unknown:
        raise StratamemError(
            ErrorCode.CONFIG_INVALID, f"unknown settings: {', '.join(unknown)}", {"keys": unknown}
        )
    clean: dict[str, Any] = {}
    if "prefetch_budget_s" in values:
        clean["prefetch_budget_s"] = clamp_budget(values["prefetch_budget_s"])
    if "lend_llm" in values:
        raw = values["lend_llm"]
        if isinstance(raw, str) and raw.lower() in {"true", "false", "yes", "no"}:
            raw = raw.lower() in {"true", "yes"}
        if not isinstance(raw, bool):
            raise StratamemError(
                ErrorCode.CONFIG_INVALID, "lend_llm must be true or false", {"key": "lend_llm"}
            )
        clean["lend_llm"] = raw
    home = stratamem_home(Path(hermes_home).expanduser().absolute())
    path = home / SETTINGS_FILE
    yaml = YAML()
    data: Any = CommentedMap()
    if path.exists():
        _read_file(path)  # validates
        data = yaml.load(path.read_text(encoding="utf-8")) or CommentedMap()
    data.update(clean)
    buf = io.StringIO()
    yaml.dump(data, buf)
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(buf.getvalue())
        os.replace(tmp, path)
    except OSError as exc:
        raise StratamemError(
            ErrorCode.CONFIG_WRITE_FAILED, f"cannot write {path}: {exc}", {"path": str(path)}
        ) from exc
    return path
