"""A table's rows by slot, held compactly: one tuple of values per row against a shared tuple of
column names, a ``dict`` made only when a row is read.

A row dict of a trace (25 keys) costs ~1.2 KB of hash table before its values; the tuple costs
8 bytes a value. Readers touch the few candidates of a query, so building their dicts on read is
cheaper than keeping every row's dict resident (the hot index held 221 MB of row dicts at 100k).

The values themselves are held once: short strings, floats and lists of strings that repeat
across rows (owner, scope, tags, ``'[]'``) are shared per column (a bounded table of distinct
values), a text equal to an earlier one of its row (a summary that is the user's text) is a
reference to it, and a text made of earlier ones joined by newlines (``search_text``: user +
assistant + summary + tags) is the list of its pieces. Reading a row rebuilds the exact values.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, SupportsIndex

Row = dict[str, Any]

#: strings up to this length are shared across rows (ids, owners, scopes, tags, short texts)
SHARED_STR_MAX = 64
#: distinct values shared per column (a column of unique values stops adding at this many)
SHARED_PER_COLUMN = 4096


class _Same:
    """The value of an earlier column of the same row."""

    __slots__ = ("col",)

    def __init__(self, col: int) -> None:
        self.col = col


class _Joined:
    """A text that is ``"\\n".join`` of pieces: literal strings, ``int`` k >= 0 for column k's
    text, k < 0 for ``" ".join`` of list column ``-k - 1``."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple[str | int, ...]) -> None:
        self.parts = parts


_SAME = [_Same(i) for i in range(64)]


def _same(col: int) -> _Same:
    return _SAME[col] if col < len(_SAME) else _Same(col)


def _piece(out: Sequence[Any], k: int) -> str:
    return str(out[k]) if k >= 0 else " ".join(out[-k - 1])


def _decode(vals: tuple[Any, ...], enc: tuple[int, ...]) -> list[Any]:
    out = list(vals)
    for i in enc:
        v = vals[i]
        t = type(v)
        if t is tuple:  # a list of strings, held as a shared tuple
            out[i] = list(v)
        elif t is _Same:
            out[i] = out[v.col]
        else:
            out[i] = "\n".join(
                [
                    p if type(p) is str else (out[p] if p >= 0 else " ".join(out[-p - 1]))
                    for p in v.parts
                ]
            )
    return out


def _value(vals: tuple[Any, ...], i: int) -> Any:
    """Encoded value ``i`` of a held row, decoded (a column read without building the row)."""
    v = vals[i]
    return list(v) if type(v) is tuple else _text(vals, i)


def _text(vals: tuple[Any, ...], k: int) -> str:
    v = vals[k]
    t = type(v)
    if t is str:
        return str(v)
    if t is _Same:
        return _text(vals, v.col)
    return "\n".join(
        [
            p if type(p) is str else (_text(vals, p) if p >= 0 else " ".join(vals[-p - 1]))
            for p in v.parts
        ]
    )


def _compose(text: str, out: Sequence[Any], upto: int) -> _Joined | None:
    """``text`` as newline-joined pieces of the row's earlier texts (None: no piece is one)."""
    single: dict[str, int] = {}
    multi: list[tuple[int, str, int]] = []
    for k in range(upto):
        v = out[k]
        if type(v) is str and v:
            piece: str = v
            ref = k
        elif (type(v) is list or type(v) is tuple) and v and all(type(x) is str for x in v):
            piece = " ".join(v)
            ref = -k - 1
        else:
            continue
        if "\n" in piece:
            multi.append((ref, piece, piece.count("\n") + 1))
        else:
            single.setdefault(piece, ref)
    lines = text.split("\n")
    parts: list[str | int] = []
    i, refs = 0, 0
    while i < len(lines):
        for k, piece, n in multi:  # a text of several lines (rare): the longer match first
            if "\n".join(lines[i : i + n]) == piece:
                parts.append(k)
                i += n
                refs += 1
                break
        else:
            got = single.get(lines[i])
            if got is None:
                parts.append(lines[i])
            else:
                parts.append(got)
                refs += 1
            i += 1
    # the pieces are the text's lines (several for a multi-line match) in order: joining gives
    # ``text`` back
    return _Joined(tuple(parts)) if refs else None


def _decode_parts(j: _Joined, out: Sequence[Any]) -> Iterator[str]:
    return (p if isinstance(p, str) else _piece(out, p) for p in j.parts)


class RowStore:
    def __init__(self) -> None:
        self._cols: list[tuple[str, ...] | None] = []
        self._vals: list[tuple[Any, ...] | None] = []
        #: per slot, the positions of its values held encoded (a list as a tuple, ``_Same``, ``_Joined``)
        self._enc: list[tuple[int, ...]] = []
        #: each distinct column tuple once (every row of a batch shares its tuple)
        self._shapes: dict[tuple[str, ...], tuple[str, ...]] = {}
        #: per column, its shared values (bounded by ``SHARED_PER_COLUMN``)
        self._shared: dict[str, dict[Any, Any]] = {}
        self._plans: dict[tuple[str, ...], list[dict[Any, Any]]] = {}
        self._encs: dict[tuple[int, ...], tuple[int, ...]] = {(): ()}

    def _shape(self, cols: tuple[str, ...]) -> tuple[str, ...]:
        return self._shapes.setdefault(cols, cols)

    def _shared_of(self, cols: tuple[str, ...]) -> list[dict[Any, Any]]:
        """The shared-value tables of a shape's columns, by position."""
        got = self._plans.get(cols)
        if got is None:
            got = self._plans[cols] = [self._shared.setdefault(c, {}) for c in cols]
        return got

    def _encode(
        self, cols: tuple[str, ...], row: Sequence[Any]
    ) -> tuple[tuple[Any, ...], tuple[int, ...]]:
        vals = list(row)
        enc: list[int] = []
        long: dict[str, int] = {}
        tables = self._shared_of(cols)
        for i, v in enumerate(row):
            t = type(v)
            if t is str:
                if len(v) <= SHARED_STR_MAX:
                    key: Any = v
                else:
                    same = long.get(v)
                    if same is not None:
                        vals[i] = _same(same)
                        enc.append(i)
                        continue
                    long[v] = i
                    if "\n" in v:
                        joined = _compose(v, row, i)
                        if joined is not None:
                            vals[i] = joined
                            enc.append(i)
                    continue
            elif t is float:
                key = (v.hex(),) if v == 0.0 else v  # 0.0 and -0.0 stay distinct
                if v != v:  # NaN
                    continue
            elif t is list and all(type(x) is str for x in v):
                v = key = tuple(v)
                enc.append(i)
            else:
                continue
            table = tables[i]
            got = table.get(key)
            if got is not None and type(got) is type(v):
                vals[i] = got
                continue
            if len(table) < SHARED_PER_COLUMN:
                table[key] = v
            vals[i] = v
        key_enc = tuple(enc)
        return tuple(vals), self._encs.setdefault(key_enc, key_enc)

    def __len__(self) -> int:
        return len(self._vals)

    def __getitem__(self, slot: SupportsIndex) -> Row | None:
        """A fresh dict of the row (None for a deleted slot); changing it changes nothing here."""
        vals = self._vals[slot]
        if vals is None:
            return None
        enc = self._enc[slot]
        return dict(zip(self._cols[slot] or (), _decode(vals, enc) if enc else vals, strict=True))

    def __setitem__(self, slot: SupportsIndex, row: Mapping[str, Any] | None) -> None:
        if row is None:
            self._cols[slot] = self._vals[slot] = None
            self._enc[slot] = ()
            return
        cols = self._shape(tuple(row))
        self._cols[slot] = cols
        self._vals[slot], self._enc[slot] = self._encode(cols, tuple(row.values()))

    def __iter__(self) -> Iterator[Row | None]:
        for i in range(len(self._vals)):
            yield self[i]

    def append(self, row: Mapping[str, Any] | None) -> None:
        self._cols.append(None)
        self._vals.append(None)
        self._enc.append(())
        self[len(self._vals) - 1] = row

    def extend_columns(self, cols: Sequence[str], values: Sequence[tuple[Any, ...]]) -> None:
        """Append rows given as value tuples in the order of ``cols`` (a bulk load)."""
        shape = self._shape(tuple(cols))
        self._cols.extend([shape] * len(values))
        for v in values:
            vals, enc = self._encode(shape, v)
            self._vals.append(vals)
            self._enc.append(enc)

    def extend_from_columns(self, cols: Sequence[str], columns: Sequence[list[Any]]) -> None:
        """Append rows given column by column (a bulk load): the same values and encoding as
        ``append`` of each row, the sharing done per column (no per-value Python dispatch)."""
        shape = self._shape(tuple(cols))
        tables = self._shared_of(shape)
        held: list[list[Any]] = []
        lists: list[int] = []
        longs: list[int] = []
        for j, col in enumerate(columns):
            got, kind = _share_column(tables[j], col)
            held.append(got)
            if kind == "list":
                lists.append(j)
            elif kind == "long":
                longs.append(j)
        rows = list(zip(*held, strict=True)) if held else []
        if not lists and not longs:
            self._cols.extend([shape] * len(rows))
            self._vals.extend(rows)
            self._enc.extend([()] * len(rows))
            return
        for row in rows:
            enc = [p for p in lists if row[p] is not None]
            out: list[Any] | None = None
            seen: dict[str, int] = {}
            for p in longs:
                v = row[p]
                if v is None or len(v) <= SHARED_STR_MAX:
                    continue
                same = seen.get(v)
                if same is None:
                    seen[v] = p
                    if "\n" not in v:
                        continue
                    code: Any = _compose(v, row, p)
                    if code is None:
                        continue
                else:
                    code = _same(same)
                if out is None:
                    out = list(row)
                out[p] = code
                enc.append(p)
            enc.sort()
            key = tuple(enc)
            self._cols.append(shape)
            self._vals.append(row if out is None else tuple(out))
            self._enc.append(self._encs.setdefault(key, key))

    def column(self, name: str) -> list[Any]:
        """Every slot's value of ``name`` (None for deleted slots and rows without it)."""
        where: dict[tuple[str, ...], int] = {
            s: s.index(name) if name in s else -1 for s in self._shapes
        }
        out: list[Any] = []
        for cols, vals, enc in zip(self._cols, self._vals, self._enc, strict=True):
            if vals is None or cols is None:
                out.append(None)
                continue
            i = where[cols]
            if i < 0:
                out.append(None)
            elif i in enc:
                out.append(_value(vals, i))
            else:
                out.append(vals[i])
        return out

    def values(self) -> Iterator[tuple[Any, ...]]:
        """The live rows' value tuples as held."""
        return (v for v in self._vals if v is not None)

    def nbytes(self, sample: int = 0) -> int:
        """Bytes held: the slot lists, each shared value once, each row's own values (with
        ``sample``, estimated from that many rows spread over the table)."""
        n = sum(sys.getsizeof(x) for x in (self._cols, self._vals, self._enc))
        for table in self._shared.values():
            n += sys.getsizeof(table) + sum(_deep(v) for v in table.values())
        slots = range(len(self._vals))
        if sample and len(slots) > sample:
            slots = slots[:: max(1, len(slots) // sample)]
        own = rows = 0
        for i in slots:
            vals, cols = self._vals[i], self._cols[i]
            if vals is None or cols is None:
                continue
            rows += 1
            own += sys.getsizeof(vals)
            for col, v in zip(cols, vals, strict=True):
                if v is None or type(v) in (bool, _Same) or (type(v) is int and -5 <= v <= 256):
                    continue
                if self._is_shared(col, v):
                    continue
                own += _deep(v)
        live = sum(1 for v in self._vals if v is not None) if sample else rows
        return n + (int(own / rows * live) if rows else 0)

    def _is_shared(self, col: str, v: Any) -> bool:
        table = self._shared.get(col)
        if not table:
            return False
        t = type(v)
        if t is str or t is tuple:
            key: Any = v
        elif t is float:
            key = (v.hex(),) if v == 0.0 else v
        else:
            return False
        return table.get(key) is v


def _share_column(table: dict[Any, Any], col: list[Any]) -> tuple[list[Any], str]:
    """A column's values with the repeating ones shared through ``table`` (the keys ``_encode``
    uses), and its kind: ``list`` (lists of strings held as tuples), ``long`` (strings, some
    longer than ``SHARED_STR_MAX``: the caller encodes those per row) or ``plain``."""
    kinds = {type(v) for v in col} - {type(None)}
    room = len(table) < SHARED_PER_COLUMN  # a batch may pass the bound once: still bounded
    put = table.setdefault if room else table.get
    if kinds == {str}:
        got = [v if v is None or len(v) > SHARED_STR_MAX else put(v, v) for v in col]
        long = any(v is not None and len(v) > SHARED_STR_MAX for v in col)
        return got, "long" if long else "plain"
    if kinds == {float}:
        return [
            v if v is None or v != v else (put(v, v) if v else _shared_zero(table, v, room))
            for v in col
        ], "plain"
    if kinds == {list} and all(type(x) is str for v in col if v for x in v):
        return [None if v is None else put(tuple(v), tuple(v)) for v in col], "list"
    return col, "plain"


def _shared_zero(table: dict[Any, Any], v: float, room: bool) -> float:
    key = (v.hex(),)  # 0.0 and -0.0 stay distinct
    got = table.get(key)
    if got is None:
        if room:
            table[key] = v
        return v
    return float(got)


def _deep(value: Any) -> int:
    """Size of one held value with what it references (strings, lists, dicts, pieces)."""
    n = sys.getsizeof(value)
    if isinstance(value, list | tuple | set):
        n += sum(_deep(v) for v in value if not (type(v) is int and -5 <= v <= 256))
    elif isinstance(value, dict):
        n += sum(sys.getsizeof(k) + _deep(v) for k, v in value.items())
    elif type(value) is _Joined:
        n += _deep(value.parts)
    return n
