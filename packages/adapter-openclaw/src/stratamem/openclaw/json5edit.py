"""Edit a JSON5 document in place (OpenClaw's ``openclaw.json``): set keys, add to or remove from
arrays, delete keys, keeping every comment, the key order and the user's formatting elsewhere.

A small recursive-descent parser records where each value sits; every edit splices the text and
re-parses, so a bad document is rejected before anything is written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError

_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER = re.compile(
    r"[+-]?(?:Infinity|NaN|0[xX][0-9A-Fa-f]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
)


@dataclass
class Node:
    start: int
    end: int
    value: Any = None
    #: objects: key -> (key_start, value node); arrays: items
    members: dict[str, tuple[int, Node]] = field(default_factory=dict)
    items: list[Node] = field(default_factory=list)
    kind: str = "scalar"


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def fail(self, msg: str) -> StratamemError:
        line = self.s.count("\n", 0, self.i) + 1
        return StratamemError(
            ErrorCode.CONFIG_INVALID, f"openclaw.json: {msg} at line {line}", {"offset": self.i}
        )

    def ws(self) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r\n\ufeff\u00a0\u2028\u2029":
                self.i += 1
            elif s.startswith("//", self.i):
                nl = s.find("\n", self.i)
                self.i = len(s) if nl < 0 else nl + 1
            elif s.startswith("/*", self.i):
                end = s.find("*/", self.i + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.i = end + 2
            else:
                return

    def value(self) -> Node:
        self.ws()
        if self.i >= len(self.s):
            raise self.fail("unexpected end")
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c in "\"'":
            start = self.i
            return Node(start, self.i_after_string(), self.string_value(start))
        m = _NUMBER.match(self.s, self.i)
        if m:
            self.i = m.end()
            return Node(m.start(), m.end(), _number(m.group()))
        m = _IDENT.match(self.s, self.i)
        if m and m.group() in ("true", "false", "null"):
            self.i = m.end()
            return Node(m.start(), m.end(), {"true": True, "false": False, "null": None}[m.group()])
        raise self.fail(f"unexpected {c!r}")

    def i_after_string(self) -> int:
        quote = self.s[self.i]
        j = self.i + 1
        while j < len(self.s):
            if self.s[j] == "\\":
                j += 2
                continue
            if self.s[j] == quote:
                self.i = j + 1
                return self.i
            if self.s[j] == "\n":
                break
            j += 1
        raise self.fail("unterminated string")

    def string_value(self, start: int) -> str:
        raw = self.s[start + 1 : self.i - 1]
        if self.s[start] == "'":
            raw = raw.replace('\\"', '"').replace("\\'", "'").replace('"', '\\"')
        raw = re.sub(r"\\\r?\n", "", raw)
        try:
            return str(json.loads(f'"{raw}"'))
        except ValueError:
            return raw

    def key(self) -> tuple[int, str]:
        start = self.i
        if self.s[self.i] in "\"'":
            self.i_after_string()
            return start, self.string_value(start)
        m = _IDENT.match(self.s, self.i)
        if not m:
            raise self.fail("expected a key")
        self.i = m.end()
        return start, m.group()

    def obj(self) -> Node:
        node = Node(self.i, 0, kind="object")
        self.i += 1
        while True:
            self.ws()
            if self.i < len(self.s) and self.s[self.i] == "}":
                self.i += 1
                node.end = self.i
                return node
            key_start, key = self.key()
            self.ws()
            if self.i >= len(self.s) or self.s[self.i] != ":":
                raise self.fail("expected ':'")
            self.i += 1
            node.members[key] = (key_start, self.value())
            self.ws()
            if self.i < len(self.s) and self.s[self.i] == ",":
                self.i += 1
            elif self.i >= len(self.s) or self.s[self.i] != "}":
                raise self.fail("expected ',' or '}'")

    def arr(self) -> Node:
        node = Node(self.i, 0, kind="array")
        self.i += 1
        while True:
            self.ws()
            if self.i < len(self.s) and self.s[self.i] == "]":
                self.i += 1
                node.end = self.i
                return node
            node.items.append(self.value())
            self.ws()
            if self.i < len(self.s) and self.s[self.i] == ",":
                self.i += 1
            elif self.i >= len(self.s) or self.s[self.i] != "]":
                raise self.fail("expected ',' or ']'")


def _number(tok: str) -> Any:
    body = tok.lstrip("+-")
    sign = -1 if tok.startswith("-") else 1
    if body == "Infinity":
        return sign * float("inf")
    if body == "NaN":
        return float("nan")
    if body.lower().startswith("0x"):
        return sign * int(body, 16)
    f = float(body)
    return sign * int(body) if body.isdigit() else sign * f


def parse(text: str) -> Node:
    p = _Parser(text)
    root = p.value()
    p.ws()
    if p.i != len(text):
        raise p.fail("trailing content")
    return root


def to_python(node: Node) -> Any:
    if node.kind == "object":
        return {k: to_python(v) for k, (_, v) in node.members.items()}
    if node.kind == "array":
        return [to_python(v) for v in node.items]
    return node.value


def _render_key(key: str) -> str:
    return key if _IDENT.fullmatch(key) else json.dumps(key)


def _render(value: Any, indent: str) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return text.replace("\n", "\n" + indent)


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    m = re.match(r"[ \t]*", text[line_start:])
    return m.group() if m else ""


def _end_of_line(text: str, pos: int) -> int:
    """Past trailing spaces and a line comment after ``pos``; stays put if code follows."""
    j = pos
    while j < len(text) and text[j] in " \t":
        j += 1
    if text.startswith("//", j):
        nl = text.find("\n", j)
        return len(text) if nl < 0 else nl
    if j < len(text) and text[j] in "\r\n":
        return j
    return pos


class Json5Document:
    """A JSON5 text with path-based edits; ``text`` is always a valid document."""

    def __init__(self, text: str) -> None:
        self.text = text if text.strip() else "{}\n"
        self.root = parse(self.text)
        if self.root.kind != "object":
            raise StratamemError(ErrorCode.CONFIG_INVALID, "openclaw.json must hold an object")

    def _splice(self, start: int, end: int, new: str) -> None:
        text = self.text[:start] + new + self.text[end:]
        self.root = parse(text)
        self.text = text

    def _node(self, path: tuple[str, ...]) -> Node | None:
        node: Node | None = self.root
        for key in path:
            if node is None or node.kind != "object" or key not in node.members:
                return None
            node = node.members[key][1]
        return node

    def get(self, *path: str) -> Any:
        node = self._node(path)
        return None if node is None else to_python(node)

    def set(self, path: tuple[str, ...], value: Any) -> bool:
        """Set ``path`` to ``value`` (creating parents); False when it already had that value."""
        node = self._node(path)
        if node is not None:
            if to_python(node) == value:
                return False
            indent = _line_indent(self.text, node.start)
            self._splice(node.start, node.end, _render(value, indent))
            return True
        # deepest existing parent object
        depth = len(path) - 1
        while depth > 0 and self._node(path[:depth]) is None:
            depth -= 1
        parent = self._node(path[:depth])
        if parent is None or parent.kind != "object":
            raise StratamemError(
                ErrorCode.CONFIG_INVALID,
                f"openclaw.json: {'.'.join(path[:depth])} is not an object",
            )
        nested: Any = value
        for key in reversed(path[depth + 1 :]):
            nested = {key: nested}
        self._insert_member(parent, path[depth], nested)
        return True

    def _insert_member(self, obj: Node, key: str, value: Any) -> None:
        text = self.text
        if not obj.members:
            indent = _line_indent(text, obj.start)
            inner = indent + "  "
            member = f"{_render_key(key)}: {_render(value, inner)},"
            self._splice(obj.start, obj.end, "{\n" + inner + member + "\n" + indent + "}")
            return
        last_key_start, last = list(obj.members.values())[-1]
        indent = _line_indent(text, last_key_start)
        member = f"{_render_key(key)}: {_render(value, indent)},"
        j = last.end
        k = j
        while k < len(text) and text[k] in " \t":
            k += 1
        if k < len(text) and text[k] == ",":
            eol = _end_of_line(text, k + 1)
            self._splice(eol, eol, "\n" + indent + member)
        else:
            eol = _end_of_line(text, j)
            new = text[:j] + "," + text[j:eol] + "\n" + indent + member + text[eol:]
            self.root = parse(new)
            self.text = new

    def add_to_array(self, path: tuple[str, ...], item: Any) -> bool:
        node = self._node(path)
        if node is None:
            return self.set(path, [item])
        if node.kind != "array":
            raise StratamemError(
                ErrorCode.CONFIG_INVALID, f"openclaw.json: {'.'.join(path)} is not a list"
            )
        if item in to_python(node):
            return False
        rendered = json.dumps(item, ensure_ascii=False)
        if not node.items:
            self._splice(node.start, node.end, f"[{rendered}]")
            return True
        last = node.items[-1]
        k = last.end
        while k < len(self.text) and self.text[k] in " \t\r\n":
            k += 1
        if self.text[k] == ",":
            self._splice(k + 1, k + 1, f" {rendered},")
        else:
            self._splice(last.end, last.end, f", {rendered}")
        return True

    def remove_from_array(self, path: tuple[str, ...], item: Any) -> bool:
        node = self._node(path)
        if node is None or node.kind != "array":
            return False
        for idx, child in enumerate(node.items):
            if to_python(child) == item:
                start, end = child.start, child.end
                m = re.compile(r"\s*,").match(self.text, end)
                if m:
                    end = m.end()
                    while end < len(self.text) and self.text[end] == " ":
                        end += 1
                elif idx > 0:
                    prev_end = node.items[idx - 1].end
                    start = prev_end  # drop ", item"
                self._splice(start, end, "")
                return True
        return False

    def delete(self, path: tuple[str, ...]) -> bool:
        parent = self._node(path[:-1])
        if parent is None or parent.kind != "object" or path[-1] not in parent.members:
            return False
        key_start, node = parent.members[path[-1]]
        start = key_start
        line_start = self.text.rfind("\n", 0, start) + 1
        if not self.text[line_start:start].strip():
            start = line_start
        m = re.compile(r"[ \t]*,?[ \t]*(//[^\n]*)?\n?").match(self.text, node.end)
        end = m.end() if m else node.end
        self._splice(start, end, "")
        return True
