"""Snapshot of the wire contract's descriptors and the add-only rule that guards its evolution.

``snapshot()`` flattens every generated ``stratamem.v1`` / ``stratamem.hosts`` module into plain
JSON; ``breaking_changes(old, new)`` lists what ``new`` removed, renamed or renumbered.
Refresh the committed snapshot deliberately with
``python -m stratamem.contract.descriptors --write packages/contract/tests/snapshots/descriptors.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

__all__ = ["breaking_changes", "generated_modules", "snapshot"]

Snapshot = dict[str, Any]

_ROOT_PACKAGES = ("stratamem.v1", "stratamem.hosts")


def generated_modules() -> list[Any]:
    """Every installed ``*_pb2`` module under ``stratamem.v1`` and ``stratamem.hosts``."""
    modules: list[Any] = []
    for root in _ROOT_PACKAGES:
        try:
            pkg = importlib.import_module(root)
        except ImportError:
            continue
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{root}."):
            if info.name.endswith("_pb2"):
                modules.append(importlib.import_module(info.name))
    return sorted(modules, key=lambda m: m.__name__)


def _type_name(field: Any) -> str:
    if field.message_type is not None:
        return str(field.message_type.full_name)
    if field.enum_type is not None:
        return str(field.enum_type.full_name)
    return ""


def _message(desc: Any, out: Snapshot) -> None:
    fields = {}
    for f in desc.fields:
        fields[f.name] = {
            "number": f.number,
            "type": int(f.type),
            "type_name": _type_name(f),
            "repeated": bool(f.is_repeated),
            "presence": bool(f.has_presence) and not f.is_repeated,
            "oneof": f.containing_oneof.name if f.containing_oneof is not None else "",
        }
    out["messages"][desc.full_name] = {"fields": fields}
    for nested in desc.nested_types:
        _message(nested, out)
    for enum in desc.enum_types:
        _enum(enum, out)


def _enum(desc: Any, out: Snapshot) -> None:
    out["enums"][desc.full_name] = {v.name: v.number for v in desc.values}


def snapshot(modules: list[Any] | None = None) -> Snapshot:
    """Messages (fields with number/type/label/presence), enums and services of the contract."""
    out: Snapshot = {"files": [], "messages": {}, "enums": {}, "services": {}}
    for module in generated_modules() if modules is None else modules:
        fd = module.DESCRIPTOR
        out["files"].append(fd.name)
        for msg in fd.message_types_by_name.values():
            _message(msg, out)
        for enum in fd.enum_types_by_name.values():
            _enum(enum, out)
        for svc in fd.services_by_name.values():
            out["services"][svc.full_name] = {
                m.name: {
                    "input": m.input_type.full_name,
                    "output": m.output_type.full_name,
                    "client_streaming": bool(m.client_streaming),
                    "server_streaming": bool(m.server_streaming),
                }
                for m in svc.methods
            }
    out["files"].sort()
    return out


def breaking_changes(old: Snapshot, new: Snapshot) -> list[str]:
    """What ``new`` breaks of ``old``: removals, renames, renumbering, type/label changes."""
    problems: list[str] = []
    for name, msg in old["messages"].items():
        new_msg = new["messages"].get(name)
        if new_msg is None:
            problems.append(f"message {name} was removed or renamed")
            continue
        new_numbers = {f["number"]: fname for fname, f in new_msg["fields"].items()}
        for fname, field in msg["fields"].items():
            nf = new_msg["fields"].get(fname)
            if nf is None:
                other = new_numbers.get(field["number"])
                how = f"renamed to {other}" if other else "removed"
                problems.append(f"field {name}.{fname} (= {field['number']}) was {how}")
                continue
            for key in ("number", "type", "type_name", "repeated", "presence", "oneof"):
                if nf.get(key) != field.get(key):
                    problems.append(
                        f"field {name}.{fname} changed {key}: {field.get(key)!r} → {nf.get(key)!r}"
                    )
    for name, values in old["enums"].items():
        new_values = new["enums"].get(name)
        if new_values is None:
            problems.append(f"enum {name} was removed or renamed")
            continue
        for vname, number in values.items():
            if vname not in new_values:
                problems.append(f"enum value {name}.{vname} (= {number}) was removed or renamed")
            elif new_values[vname] != number:
                problems.append(
                    f"enum value {name}.{vname} renumbered: {number} → {new_values[vname]}"
                )
    for name, methods in old["services"].items():
        new_methods = new["services"].get(name)
        if new_methods is None:
            problems.append(f"service {name} was removed or renamed")
            continue
        for mname, method in methods.items():
            nm = new_methods.get(mname)
            if nm is None:
                problems.append(f"rpc {name}.{mname} was removed or renamed")
            elif nm != method:
                problems.append(f"rpc {name}.{mname} changed its signature: {method} → {nm}")
    return problems


def dump(snap: Snapshot) -> str:
    return json.dumps(snap, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("snapshot", type=Path, help="path of the committed descriptors.json")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="refresh the snapshot deliberately")
    group.add_argument("--check", action="store_true", help="exit 1 on a breaking change (default)")
    args = parser.parse_args(argv)
    current = snapshot()
    if args.write:
        if args.snapshot.exists():
            problems = breaking_changes(json.loads(args.snapshot.read_text("utf-8")), current)
            for p in problems:
                print(f"warning: breaking change recorded: {p}", file=sys.stderr)
        args.snapshot.parent.mkdir(parents=True, exist_ok=True)
        args.snapshot.write_text(dump(current), "utf-8")
        print(f"wrote {args.snapshot}")
        return 0
    problems = breaking_changes(json.loads(args.snapshot.read_text("utf-8")), current)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
