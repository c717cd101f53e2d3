"""Load ``config.yaml`` from the home: deep merge over the defaults, validate, keep comments on write.

Unknown keys are kept (with a warning); a value of the wrong type or out of range is a typed
``config_invalid`` error naming the key. The file is created with mode 0600 (it can hold API keys).
"""

from __future__ import annotations

import copy
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.files import create_whole
from stratamem.core.config.defaults import DEFAULTS, defaults
from stratamem.core.telemetry import get_logger

CONFIG_FILE = "config.yaml"

_log = get_logger("config")

_HEADER = """\
# Stratamem configuration. Only the keys you set here override the built-in defaults
# (see `stratamem.core.config.defaults`). Comments and order are preserved on writes.
version: 1
"""

#: key path -> (min, max) for numeric values
_RANGES: dict[str, tuple[float, float]] = {
    "embedding.batch_size": (1, 1024),
    "embedding.threads": (1, 64),
    "embedding.background_nice": (1, 19),
    "capture.max_text_chars": (200, 64000),
    "capture.max_tool_output_chars": (200, 32000),
    "capture.batch_threshold": (1, 64),
    "llm.timeout_ms": (1000, 3_600_000),
    "llm.max_retries": (0, 10),
    "retrieval.tier1_top_k": (0, 100),
    "retrieval.tier2_top_k": (0, 100),
    "retrieval.tier3_top_k": (0, 100),
    "retrieval.mmr_lambda": (0.0, 1.0),
    "retrieval.min_trace_sim": (-1.0, 1.0),
    "retrieval.relative_threshold_floor": (0.0, 1.0),
    "retrieval.trace_lexical_floor": (0.0, 1.0),
    "retrieval.smart_seed_ratio": (0.0, 1.0),
    "retrieval.rrf_constant": (0, 10000),
    "retrieval.candidate_pool_factor": (1, 100),
    "retrieval.vector_scan_max_age_ms": (0, 366 * 86_400_000),
    "retrieval.fusion_lexical_weight": (0.0, 1.0),
    "retrieval.fusion_lexical_power": (0.25, 4.0),
    "retrieval.neighbour_weight": (0.0, 2.0),
    "retrieval.neighbour_expand_top": (0, 100),
    "retrieval.time_window_weight": (0.0, 2.0),
    "retrieval.relevance_floor_cosine": (-1.0, 1.0),
    "retrieval.relevance_floor_coverage": (0.0, 1.0),
    "retrieval.trace_pool_scale": (1.0, 10.0),
    "retrieval.present_recency_weight": (0.0, 2.0),
    "retrieval.llm_query_rewrite_timeout_ms": (50, 600_000),
    "retrieval.llm_filter_timeout_ms": (50, 600_000),
    "retrieval.dense_common_word_share": (0.0, 1.0),
    "retrieval.expand_vocab_neighbours": (1, 64),
    "retrieval.expand_vocab_min_cosine": (-1.0, 1.0),
    "retrieval.expand_vocab_min_query_cosine": (-1.0, 1.0),
    "retrieval.expand_vocab_weight": (0.0, 4.0),
    "retrieval.expand_vocab_max_share": (0.0, 1.0),
    "retrieval.session_diversity": (0.0, 1.0),
    "retrieval.session_diversity_free": (0, 100),
    "retrieval.aspect_coverage": (0.0, 10.0),
    "retrieval.aspect_coverage_own": (0.0, 10.0),
    "retrieval.aspect_coverage_top": (0, 1000),
    "retrieval.aspect_coverage_decay": (0.0, 1.0),
    "storage.ann_threshold_rows": (1, 10**10),
    "storage.cleanup_older_than_s": (0, 10**8),
    "storage.optimize_interval_s": (1, 10**8),
    "session.merge_max_gap_ms": (0, 10**10),
    "session.max_turns_per_episode": (1, 10000),
    "reward.gamma": (0.0, 1.0),
    "learning.rescore_interval_s": (0.0, 10**8),
    "learning.rescore_dedupe_s": (0.0, 10**8),
    "learning.rescore_page_size": (1, 100_000),
    "learning.rescore_min_age_s": (0.0, 10**8),
    "learning.rescore_backoff_after": (0, 1000),
    "learning.rescore_backoff_base_s": (0.0, 10**8),
    "learning.rescore_backoff_max_s": (0.0, 10**8),
}

#: key path -> allowed string values
_CHOICES: dict[str, tuple[str, ...]] = {
    "retrieval.tag_filter": ("auto", "off", "strict"),
    "retrieval.trace_fusion": ("calibrated", "rrf"),
    "retrieval.session_diversity_gate": ("set_query", "always"),
    "retrieval.aspect_coverage_gate": ("set_query", "always"),
    "retrieval.skill_injection_mode": ("summary", "full"),
    "session.follow_up_mode": ("merge_follow_ups", "episode_per_turn"),
    "capture.batch_mode": ("per_step", "per_episode", "auto"),
    "logging.level": ("trace", "debug", "info", "warn", "warning", "error", "fatal"),
}


def _yaml() -> YAML:
    y = YAML()  # round-trip: keeps comments and key order
    y.preserve_quotes = True
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Objects merge recursively; arrays and scalars replace; a scalar where an object is expected
    is left to validation (it is reported, not silently ignored)."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    """ruamel containers -> plain dict/list."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _unknown_keys(over: Mapping[str, Any], ref: Mapping[str, Any], prefix: str = "") -> list[str]:
    found: list[str] = []
    for key, value in over.items():
        path = f"{prefix}{key}"
        if key not in ref:
            found.append(path)
        elif isinstance(value, Mapping) and isinstance(ref[key], dict) and ref[key]:
            found.extend(_unknown_keys(value, ref[key], path + "."))
    return found


def _bad(key: str, message: str, value: Any) -> StratamemError:
    return StratamemError(
        ErrorCode.CONFIG_INVALID,
        f"config key {key!r}: {message}",
        {"key": key, "value": repr(value)},
    )


def validate(cfg: Mapping[str, Any], ref: Mapping[str, Any] = DEFAULTS, prefix: str = "") -> None:
    """Check every known key's type (and range/choices); raise ``config_invalid`` naming the key."""
    for key, default in ref.items():
        path = f"{prefix}{key}"
        if key not in cfg:
            continue
        value = cfg[key]
        if isinstance(default, dict):
            if not isinstance(value, Mapping):
                raise _bad(path, "expected a mapping", value)
            if default:
                validate(value, default, path + ".")
            continue
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise _bad(path, "expected true or false", value)
        elif isinstance(default, int | float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _bad(path, "expected a number", value)
            if isinstance(default, int) and not isinstance(default, bool) and value != int(value):
                raise _bad(path, "expected an integer", value)
            if value != value or value in (float("inf"), float("-inf")):
                raise _bad(path, "expected a finite number", value)
            lo, hi = _RANGES.get(path, (float("-inf"), float("inf")))
            if not lo <= value <= hi:
                raise _bad(path, f"must be between {lo} and {hi}", value)
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise _bad(path, "expected a string", value)
            choices = _CHOICES.get(path)
            if choices and value not in choices:
                raise _bad(path, f"must be one of {', '.join(choices)}", value)
        elif isinstance(default, list) and not isinstance(value, list):
            raise _bad(path, "expected a list", value)


def _normalise_ints(cfg: dict[str, Any], ref: Mapping[str, Any]) -> None:
    for key, default in ref.items():
        if key not in cfg:
            continue
        if isinstance(default, dict) and isinstance(cfg[key], dict):
            _normalise_ints(cfg[key], default)
        elif (
            isinstance(default, int)
            and not isinstance(default, bool)
            and isinstance(cfg[key], float)
        ):
            cfg[key] = int(cfg[key])
        elif isinstance(default, float) and isinstance(cfg[key], int):
            cfg[key] = float(cfg[key])


def read_user_config(path: Path) -> dict[str, Any]:
    """Parse the YAML file (missing file -> empty); a parse error is ``config_invalid``."""
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
        data = _yaml().load(text)
    except (YAMLError, UnicodeDecodeError) as exc:
        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"{path} is not valid YAML: {exc}",
            {"path": str(path)},
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"{path} must contain a mapping at the top level",
            {"path": str(path), "key": ""},
        )
    return _plain(data)  # type: ignore[no-any-return]


def set_dotted(cfg: dict[str, Any], dotted: str, value: Any) -> None:
    node = cfg
    parts = dotted.split(".")
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            node[part] = nxt
        node = nxt
    node[parts[-1]] = value


def overrides_to_tree(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``{"retrieval.tier2_top_k": 7, "storage": {...}}`` or ``retrieval__tier2_top_k=7`` -> tree."""
    tree: dict[str, Any] = {}
    for key, value in overrides.items():
        dotted = key.replace("__", ".")
        if isinstance(value, Mapping) and "." not in dotted:
            tree = deep_merge(tree, {dotted: value})
        else:
            set_dotted(tree, dotted, value)
    return tree


def unknown_keys(home: Path) -> list[str]:
    """Dotted keys of ``home``'s config.yaml that no default names (a typo is ignored, not an
    error: the service logs them, ``stratamem doctor`` shows them to the user)."""
    return _unknown_keys(read_user_config(home / CONFIG_FILE), DEFAULTS)


def load_config(home: Path, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Effective config of ``home``: defaults <- config.yaml <- overrides; validated."""
    user = read_user_config(home / CONFIG_FILE)
    for key in _unknown_keys(user, DEFAULTS):
        _log.warning("config.unknown_key", key=key, path=str(home / CONFIG_FILE))
    merged = deep_merge(defaults(), user)
    if overrides:
        merged = deep_merge(merged, overrides_to_tree(overrides))
    validate(merged)
    _normalise_ints(merged, DEFAULTS)
    return merged


def ensure_config_file(home: Path) -> Path:
    """Create ``config.yaml`` (mode 0600) with a short header if missing; tighten mode if present."""
    path = home / CONFIG_FILE
    # two processes opening a fresh home both get here: one creates it, the other keeps that one
    if path.exists() or not create_whole(path, _HEADER, 0o600):
        os.chmod(path, 0o600)
    return path


def patch_config_file(home: Path, patch: Mapping[str, Any]) -> dict[str, Any]:
    """Apply ``patch`` (nested or dotted keys) to ``config.yaml`` keeping comments and key order.

    The merged result is validated before anything is written; the write is atomic (mode 0600).
    """
    path = ensure_config_file(home)
    y = _yaml()
    try:
        doc = y.load(path.read_text(encoding="utf-8"))
    except YAMLError as exc:
        raise StratamemError(
            ErrorCode.CONFIG_INVALID, f"{path} is not valid YAML: {exc}", {"path": str(path)}
        ) from exc
    if doc is None:
        doc = y.load("{}")
    tree = overrides_to_tree(patch)
    candidate = deep_merge(deep_merge(defaults(), _plain(doc)), tree)
    validate(candidate)
    _apply_in_place(doc, tree)
    buf = io.StringIO()
    y.dump(doc, buf)
    tmp = path.with_suffix(".yaml.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise StratamemError(
            ErrorCode.CONFIG_WRITE_FAILED, f"cannot write {path}: {exc}", {"path": str(path)}
        ) from exc
    from stratamem.core.telemetry.audit import audit

    audit("config.changed", actor="config", target=str(path), keys=sorted(_dotted_keys(tree)))
    return load_config(home)


def _dotted_keys(tree: Mapping[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        out += _dotted_keys(value, path + ".") if isinstance(value, Mapping) else [path]
    return out


def _apply_in_place(doc: Any, tree: Mapping[str, Any]) -> None:
    for key, value in tree.items():
        if isinstance(value, Mapping) and isinstance(doc.get(key), Mapping):
            _apply_in_place(doc[key], value)
        else:
            doc[key] = value


def get_dotted(cfg: Mapping[str, Any], dotted: str) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        node = node[part]
    return node
