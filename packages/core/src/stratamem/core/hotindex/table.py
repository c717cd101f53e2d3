"""One table held in memory: quantised vector codes, filter columns, lexical index; rows by slot
in a side file (``rowfile.py``: read only for the rows a query returns).

A slot is a row's position; it never moves (a delete leaves a tombstone, an update rewrites the slot
in place), so the vector matrices, the filter columns, the postings and the ANN keys all share it.
Visibility is decided per distinct ownership tuple by the one ownership rule, then applied to the
slots as an integer-code mask: a query never evaluates the rule per row. Vectors are held as
4-bit (or int8) codes with a scale per row, in a side file scanned a chunk at a time with a SIMD
kernel (``codefile.py``, ``quantized.py``); what rescores a query's candidates (int8 codes, int4
residual, scale) is in another (``slotfile.py``), read only for them.
"""

from __future__ import annotations

import asyncio
import math
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from stratamem.core.config.settings import Section
from stratamem.core.hotindex import slotsets
from stratamem.core.hotindex.ann import Ann
from stratamem.core.hotindex.codefile import CodeFile
from stratamem.core.hotindex.ids import IdIndex, SlotIds
from stratamem.core.hotindex.lexical import Lexical, Substrings
from stratamem.core.hotindex.quantized import (
    encode_query,
    layout_of,
    quantize_rows,
    unit_rows,
)
from stratamem.core.hotindex.rowfile import Row, RowFile
from stratamem.core.hotindex.sessions import SessionCodes, SessionOrder, order_of
from stratamem.core.hotindex.slotfile import SlotFile
from stratamem.core.storage.ownership import Scope

#: the columns the ownership rule may read; rows with equal values are equally visible
OWNER_COLUMNS = (
    "owner_agent_kind",
    "owner_profile_id",
    "owner_workspace_id",
    "share_scope",
    "share_target",
)


def rows_of(batch: pa.RecordBatch, vec_cols: Sequence[str]) -> list[Row]:
    """The batch as row dicts, vector columns as float32 arrays (None where null)."""
    names = batch.schema.names
    plain = [n for n in names if n not in vec_cols]
    rows: list[Row] = batch.select(plain).to_pylist()
    for c in vec_cols:
        if c not in names:
            continue
        mat, valid = _matrix(batch.column(c))
        for i, r in enumerate(rows):
            r[c] = mat[i] if valid[i] else None
    return rows


def _matrix(col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A fixed-size-list column as one float32 matrix (zeros where null) and its validity."""
    dim = col.type.list_size
    flat = np.asarray(col.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
    valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
    if col.null_count:  # flatten() drops null entries: place the present ones
        mat = np.zeros((len(col), dim), dtype=np.float32)
        mat[valid] = flat.reshape(-1, dim)
    else:
        mat = flat.reshape(-1, dim)
    return mat, valid


def unit_matrix(batch: pa.RecordBatch, col: str, dim: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Column ``col`` of ``batch`` as unit float32 rows and which rows hold one (a vector of
    another length, a zero or non-finite norm holds none), normalised exactly as ``_put`` does:
    the norm of each row by itself (a matrix-wide reduction may differ in the last bit)."""
    if col not in batch.schema.names:
        return None
    arr = batch.column(col)
    if getattr(arr.type, "list_size", None) != dim:
        return None
    mat, ok = _matrix(arr)
    ok = ok.copy()
    out = np.zeros_like(mat)
    for i in np.flatnonzero(ok).tolist():
        norm = float(np.linalg.norm(mat[i]))
        if not norm or not math.isfinite(norm):
            ok[i] = False
            continue
        out[i] = mat[i] / norm
    return out, ok


#: a (0, 0) array: the codes and scales ``unit_rows`` does not read with ``"i4"``
_NONE = np.zeros((0, 0), dtype=np.uint8)
#: sessions whose (ts, id) order is kept between reads (a session's turns are read for the
#: neighbours of a hit: the cache of every session ever read grew ~1 KB a session)
SESSION_ORDERS_CACHED = 256
#: vectors handed to the graph per call while it is built (a float32 copy of this many rows,
#: 0.4 GB at 384 dims; one call up to it, as the graph was built before the int8 rows)
ANN_CHUNK = 262144


def _room(have: int, need: int) -> int:
    """Rows to hold ``need`` when ``have`` are held (×1.25 steps)."""
    return have if need <= have else max(need, have + have // 4, 64)


def _grow(arr: np.ndarray, need: int) -> np.ndarray:
    """``arr`` with room for ``need`` rows (``_room``)."""
    if need <= len(arr):
        return arr
    new = np.zeros((_room(len(arr), need), *arr.shape[1:]), dtype=arr.dtype)
    new[: len(arr)] = arr
    return new


class HotTable:
    def __init__(
        self,
        name: str,
        vec_cols: Sequence[str],
        dim: int,
        cfg: Mapping[str, Any],
        spill_dir: Path | str | None = None,
    ) -> None:
        self.name = name
        self.vec_cols = tuple(vec_cols)
        self.dim = dim
        self.cfg = Section("storage", cfg)
        #: the rows themselves, in a side file in ``spill_dir`` (``rowfile.py``)
        self.rows = RowFile(spill_dir)
        #: slot -> id and id -> slot (``ids.py``: no string per id resident)
        self.ids = SlotIds(self.rows)
        self.slot_of = IdIndex(self.rows)
        self.n = 0
        self.live = 0
        self.alive = np.zeros(0, dtype=bool)
        self.owner = np.zeros(0, dtype=np.int32)
        self._owner_keys: list[tuple[Any, ...]] = []
        self._owner_code: dict[tuple[Any, ...], int] = {}
        self._visible_cache: dict[Scope, tuple[int, np.ndarray]] = {}
        self.priority = np.zeros(0, dtype=np.float32)
        self.ts = np.zeros(0, dtype=np.int64)
        self.session = np.zeros(0, dtype=np.int32)
        #: session id -> its code (``sessions.py``: no Python object per session)
        self.session_code = SessionCodes()
        #: session code -> its slots, ascending (a session's turns without scanning the table)
        self.by_session: dict[int, array[int]] = {}
        #: session code -> its slots in (ts, id) order, built on first read
        self._session_order: dict[int, SessionOrder] = {}
        #: tag -> its slots, ascending
        self.tags: dict[str, array[int]] = {}
        #: the first stage's codes and a scale per row (``quantized.py``: 4-bit codes with
        #: ``hot_vector_dtype = "i4"``, int8 with "i8", float32 rows with "f32"), in a side file
        #: per column scanned a chunk at a time (``codefile.py``); what rescoring reads (the int8
        #: codes, residual and scale with "i4", the residual with "i8"), only for candidates, in
        #: another (``slotfile.py``). In memory: which slots hold a vector
        self.layout = layout_of(self.cfg.get_str("hot_vector_dtype"))
        self.codes = {c: CodeFile(self.layout, dim, spill_dir) for c in self.vec_cols}
        self.resid = {c: SlotFile(self.layout.file_width(dim), spill_dir) for c in self.vec_cols}
        self.has = {c: np.zeros(0, dtype=bool) for c in self.vec_cols}
        #: slots the first stage scans per column: the length the in-memory code matrix had
        #: (0 until a vector is written, then ``_room``'s steps). Kept because ``argpartition``
        #: orders tied scores by the whole array it is given: the same length, the same order
        self.scan_rows = dict.fromkeys(self.vec_cols, 0)
        self.ann: dict[str, Ann | None] = dict.fromkeys(self.vec_cols)
        self._ann_log: dict[str, list[tuple[str, int]] | None] = dict.fromkeys(self.vec_cols)
        self.lex = Lexical(spill_dir)
        self.sub = Substrings()
        self.version = 0
        self._reserved = 0
        self._masks: dict[Any, np.ndarray] = {}
        self._masks_version = -1

    def reserve(self, rows: int) -> None:
        """Size the arrays for ``rows`` up front (a load knows its row count)."""
        self._reserved = rows
        self.alive = _grow(self.alive, rows)

    # -- writes ------------------------------------------------------------------------------
    def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        for row in rows:
            self._put(row)
        self.version += 1

    def load_batch(self, batch: pa.RecordBatch) -> None:
        """Append one Arrow batch of rows new to this table, column by column (a load).

        Ends in the state ``upsert`` of the same rows would leave (same slots, rows, codes,
        postings, unit vectors): vectors are normalised as one matrix, the filter columns filled
        from Arrow arrays, the texts indexed by ``Lexical.add_many``. A batch with an id already
        here (or twice in it), or a table with an ANN graph, goes through ``upsert``.
        """
        names = batch.schema.names
        k = batch.num_rows
        ids = [str(i) for i in batch.column("id").to_pylist()]
        if (
            k == 0
            or len(set(ids)) != k
            or self.slot_of.any_held(ids)
            or any(self.ann[c] is not None or self._ann_log[c] is not None for c in self.vec_cols)
        ):
            self.upsert(rows_of(batch, self.vec_cols))
            return
        plain = [n for n in names if n not in self.vec_cols and not n.startswith("_")]
        columns = [batch.column(n).to_pylist() for n in plain]
        first, end = self.n, self.n + k
        self.n = end
        for attr in ("alive", "owner", "priority", "ts", "session"):
            setattr(self, attr, _grow(getattr(self, attr), end))
        for c in self.vec_cols:
            self.has[c] = _grow(self.has[c], end)
        self.rows.extend_from_columns(plain, columns)
        self.slot_of.update(ids, range(first, end))
        self.alive[first:end] = True
        self.live += k

        def column(name: str) -> list[Any]:
            return batch.column(name).to_pylist() if name in names else [None] * k

        codes = np.empty(k, dtype=np.int32)
        for i, key in enumerate(zip(*(column(c) for c in OWNER_COLUMNS), strict=True)):
            code = self._owner_code.get(key)
            if code is None:
                code = self._owner_code[key] = len(self._owner_keys)
                self._owner_keys.append(key)
            codes[i] = code
        self.owner[first:end] = codes
        self.priority[first:end] = [float(v or 0.0) for v in column("priority")]
        self.ts[first:end] = [int(v or 0) for v in column("ts")]
        for i, sid in enumerate(column("session_id")):
            if sid is None:
                continue
            code = self.session_code.code(str(sid))
            self._session_order.pop(code, None)
            self.session[first + i] = code
            slotsets.add(self.by_session, code, first + i)
        for i, tags in enumerate(column("tags")):
            for t in tags or ():
                slotsets.add(self.tags, str(t), first + i)
        self.lex.add_many(first, [str(v or "") for v in column("search_text")])
        self.sub.invalidate()
        for c in self.vec_cols:
            got = unit_matrix(batch, c, self.dim)
            if got is None:
                continue
            mat, ok = got
            if not ok.any():
                continue
            if self.scan_rows[c] < end:
                self.scan_rows[c] = _room(self.scan_rows[c], max(end, self._reserved))
            codes, scale, records = quantize_rows(mat[ok], self.layout)
            block = np.zeros((k, records.shape[1]), dtype=np.uint8)
            block[ok] = records
            self.resid[c].write(first, block)
            all_codes = np.zeros((k, codes.shape[1]), dtype=codes.dtype)
            all_codes[ok] = codes
            all_scales = np.zeros(k, dtype=np.float32)
            all_scales[ok] = scale
            self.codes[c].write(first, all_codes, all_scales)
            self.has[c][first:end] = ok
        self.version += 1

    def update(self, row_id: str, values: Mapping[str, Any]) -> None:
        slot = self.slot_of.get(row_id)
        if slot is None:
            return
        # a vector the update leaves alone keeps its stored bytes (re-quantising the stored unit
        # vector would move its residual)
        keep = frozenset(c for c in self.vec_cols if c not in values and self.has[c][slot])
        self._put({**(self.rows[slot] or {}), **values}, keep)
        self.version += 1

    def delete(self, ids: Sequence[str]) -> None:
        slots = [s for s in (self.slot_of.pop(rid, None) for rid in ids) if s is not None]
        # the postings of every deleted row at once: a long postings' record is rewritten once
        rows = [self.rows[s] for s in slots]
        texts = [str((r or {}).get("search_text") or "") for r in rows]
        self.lex.remove_many(
            [(s, t) for s, t, r in zip(slots, texts, rows, strict=True) if r is not None]
        )
        for slot, text in zip(slots, texts, strict=True):
            self._clear(slot, text=text)  # its postings are out already
            self._session_order.pop(int(self.session[slot]), None)
            slotsets.discard(self.by_session, int(self.session[slot]), slot)
            self.session[slot] = 0
            self.rows[slot] = None
            self.alive[slot] = False
            self.live -= 1
        self.version += 1

    def _new_slot(self, rid: str) -> int:
        slot = self.n
        self.n += 1
        need = self.n
        self.alive = _grow(self.alive, need)
        self.owner = _grow(self.owner, need)
        self.priority = _grow(self.priority, need)
        self.ts = _grow(self.ts, need)
        self.session = _grow(self.session, need)
        for c in self.vec_cols:
            self.has[c] = _grow(self.has[c], need)
        self.rows.append(None)
        self.slot_of[rid] = slot
        self.alive[slot] = True
        self.live += 1
        return slot

    def _clear(
        self, slot: int, keep: frozenset[str] = frozenset(), text: str | None = None
    ) -> bool:
        """Take an existing slot out of the lexical, tag and ANN indexes (before a rewrite);
        the vectors of the columns in ``keep`` stay, and its postings if its text is ``text``
        (an update of other columns: long postings are in a file, where taking a slot out and
        back rewrites their records). Whether the postings stayed."""
        old = self.rows[slot]
        if old is None:
            return False
        kept = text is not None and str(old.get("search_text") or "") == text
        if not kept:
            self.lex.remove(slot, str(old.get("search_text") or ""))
        self.sub.invalidate()
        for t in old.get("tags") or ():
            slotsets.discard(self.tags, str(t), slot)
        for c in self.vec_cols:
            if self.has[c][slot] and c not in keep:
                self.has[c][slot] = False
                self._ann_op(c, "remove", slot)
        return kept

    def _put(self, row: Mapping[str, Any], keep: frozenset[str] = frozenset()) -> None:
        rid = str(row["id"])
        slot = self.slot_of.get(rid)
        text = str(row.get("search_text") or "")
        kept = False
        if slot is None:
            slot = self._new_slot(rid)
        else:
            kept = self._clear(slot, keep, text)
        clean: Row = {
            k: v for k, v in row.items() if k not in self.vec_cols and not k.startswith("_")
        }
        self.rows[slot] = clean
        key = tuple(clean.get(k) for k in OWNER_COLUMNS)
        code = self._owner_code.get(key)
        if code is None:
            code = self._owner_code[key] = len(self._owner_keys)
            self._owner_keys.append(key)
        self.owner[slot] = code
        self.priority[slot] = float(clean.get("priority") or 0.0)
        self.ts[slot] = int(clean.get("ts") or 0)
        sid = clean.get("session_id")
        old_code = int(self.session[slot])
        code = 0
        if sid is not None:
            code = self.session_code.code(str(sid))
        self._session_order.pop(old_code, None)
        self._session_order.pop(code, None)
        if old_code != code:
            slotsets.discard(self.by_session, old_code, slot)
        self.session[slot] = code
        if code:
            slotsets.add(self.by_session, code, slot)
        for t in clean.get("tags") or ():
            slotsets.add(self.tags, str(t), slot)
        if not kept:
            self.lex.add(slot, text)
        self.sub.invalidate()
        for c in self.vec_cols:
            v = row.get(c)
            if v is None:
                continue
            arr = np.asarray(v, dtype=np.float32).reshape(-1)
            norm = float(np.linalg.norm(arr)) if arr.shape == (self.dim,) else 0.0
            if not norm or not math.isfinite(norm):
                continue
            if self.scan_rows[c] <= slot:
                self.scan_rows[c] = _room(self.scan_rows[c], max(slot + 1, self._reserved))
            codes, scale, records = quantize_rows((arr / norm)[None, :], self.layout)
            self.codes[c].write(slot, codes, scale)
            self.resid[c].write(slot, records)
            self.has[c][slot] = True
            self._ann_op(c, "add", slot)

    def _ann_op(self, col: str, op: str, slot: int) -> None:
        log = self._ann_log[col]
        if log is not None:  # a background build is running: replay after it
            log.append((op, slot))
        ann = self.ann[col]
        if ann is None:
            return
        if op == "remove":
            ann.remove(slot)
        else:
            ann.remove(slot)
            ann.add(np.array([slot]), self.unit_vectors(col, np.array([slot])))

    # -- ANN upkeep --------------------------------------------------------------------------
    def needs_ann(self, col: str) -> bool:
        threshold = self.cfg.get_int("hot_ann_threshold_rows")
        return (
            self.ann[col] is None
            and self._ann_log[col] is None
            # (count_nonzero: a bool array's sum casts it through a 64 KB buffer on every write)
            and int(np.count_nonzero(self.has[col][: self.n])) >= threshold
        )

    async def build_ann(self, col: str) -> None:
        """Build the graph in a worker thread from a snapshot; writes meanwhile are replayed."""
        self._ann_log[col] = []
        try:
            slots = np.flatnonzero(self.has[col][: self.n])
            ann = Ann(self.dim, self.cfg)
            ann.build_over(len(slots))
            # the graph gets float32 unit rows (usearch quantises floats itself: fed the int8
            # rows as they are, its recall@10 read 0.972 vs 0.983 at 100k), a chunk at a time
            # (a write meanwhile may land in a chunk: the log replays it after the build)
            for at in range(0, len(slots), ANN_CHUNK):
                part = slots[at : at + ANN_CHUNK]
                await asyncio.to_thread(self._ann_add_span, ann, col, part)
            for op, slot in self._ann_log[col] or []:
                ann.remove(slot)
                if op == "add" and self.has[col][slot]:
                    ann.add(np.array([slot]), self.unit_vectors(col, np.array([slot])))
            self.ann[col] = ann
        finally:
            self._ann_log[col] = None

    # -- reads -------------------------------------------------------------------------------
    def full_row(self, slot: int) -> Row:
        """The row with its vectors as the index holds them: float32 unit vectors in the stored
        int8 direction (``_unit_vectors`` marks them as normalised for the retrieval candidates;
        the store's exact float32 vectors stay in LanceDB)."""
        row = self.rows[slot] or {}
        for c in self.vec_cols:
            row[c] = self.unit_vector(c, slot) if self.has[c][slot] else None
        row["_unit_vectors"] = True
        return row

    def unit_vector(self, col: str, slot: int) -> np.ndarray:
        """The stored vector of ``slot`` as a float32 unit vector."""
        out: np.ndarray = self.unit_vectors(col, np.array([slot]))[0]
        return out

    def unit_vectors(self, col: str, slots: np.ndarray) -> np.ndarray:
        """``unit_vector`` of each slot, as one float32 matrix (the side file read per slot)."""
        records = self.resid[col].read(slots)
        if self.layout.name == "i4":  # the records alone make the vectors
            return unit_rows(_NONE, _NONE, records, self.layout, self.dim)
        codes, scales = self.codes[col].read(slots)
        return unit_rows(codes, scales, records, self.layout, self.dim)

    def _ann_add_span(self, ann: Ann, col: str, part: np.ndarray) -> None:
        """Hand ``part`` (ascending slots) to the graph, the side file's records of their span
        read in one sequential pass (a build reads every vector's)."""
        lo = int(part[0])
        hi = int(part[-1]) + 1
        records = self.resid[col].read_range(lo, hi)[part - lo]
        if self.layout.name == "i4":
            ann.add(part, unit_rows(_NONE, _NONE, records, self.layout, self.dim))
            return
        codes, scales = self.codes[col].read_range(lo, hi)
        ann.add(
            part, unit_rows(codes[part - lo], scales[part - lo], records, self.layout, self.dim)
        )

    def scope_codes(self, scope: Scope) -> np.ndarray:
        """The owner codes ``scope`` may read (the one ownership rule, per distinct owner tuple)."""
        cached = self._visible_cache.get(scope)
        if cached is None or cached[0] != len(self._owner_keys):
            codes = np.array(
                [
                    i
                    for i, key in enumerate(self._owner_keys)
                    if scope.accepts(dict(zip(OWNER_COLUMNS, key, strict=True)))
                ],
                dtype=np.int32,
            )
            if len(self._visible_cache) > 256:
                self._visible_cache.clear()
            cached = self._visible_cache[scope] = (len(self._owner_keys), codes)
        return cached[1]

    def scope_mask(self, scope: Scope) -> np.ndarray:
        """Live slots ``scope`` may read (the one ownership rule, per distinct owner tuple)."""
        codes = self.scope_codes(scope)
        n = self.n
        if len(codes) == len(self._owner_keys):
            return self.alive[:n].copy()
        if len(codes) == 1:
            out: np.ndarray = (self.owner[:n] == codes[0]) & self.alive[:n]
        else:
            out = np.isin(self.owner[:n], codes) & self.alive[:n]
        return out

    def where(self, mask: np.ndarray, pred: Callable[[Row], bool]) -> np.ndarray:
        """``mask`` narrowed by a per-row predicate (for the small learned tables)."""
        out = mask.copy()
        for slot in np.flatnonzero(mask):
            row = self.rows[slot]
            out[slot] = row is not None and pred(row)
        return out

    def masks(self) -> dict[Any, np.ndarray]:
        """A scratch cache of slot masks valid for the current table version (readers' filters)."""
        if self._masks_version != self.version:
            self._masks = {}
            self._masks_version = self.version
        return self._masks

    def session_slots(self, session_id: str) -> np.ndarray:
        """Live slots of one session, ascending."""
        return slotsets.slots(self.by_session.get(self.session_code.get(session_id, 0) or 0))

    def session_order(self, session_id: str) -> SessionOrder:
        """A session's live rows ordered by (ts, id) (``sessions.py``: ids read only where
        timestamps tie), cached until one of the session's rows is written."""
        code = self.session_code.get(session_id, 0) or 0
        got = self._session_order.get(code)
        if got is None:
            got = order_of(slotsets.slots(self.by_session.get(code)), self.ts, self.ids.__getitem__)
            if code:
                if len(self._session_order) >= SESSION_ORDERS_CACHED:
                    self._session_order.clear()
                self._session_order[code] = got
        return got

    def tag_mask(self, tags: Sequence[str]) -> np.ndarray:
        out = np.zeros(self.n, dtype=bool)
        for t in tags:
            out[slotsets.slots(self.tags.get(t))] = True
        return out

    def vector(
        self,
        col: str,
        qvec: np.ndarray,
        mask: np.ndarray,
        limit: int,
        keep: dict[int, np.ndarray] | None = None,
    ) -> list[tuple[int, float]]:
        """Top-``limit`` cosine among the slots passing ``mask``: a scan of the codes (or the ANN
        graph's proposals), then its best ``layout.rescore`` × ``limit`` rescored with the
        float32 query against the stored unit vectors (``quantized.py``), best first. ``keep``:
        gets the unit vector of each slot returned (``unit_vector``'s bytes: its rows are made
        without reading the side file again, ``hot_channels.full_rows``)."""
        n = min(self.n, self.scan_rows[col])
        if n == 0 or limit <= 0 or qvec.shape != (self.dim,):
            return []
        valid = mask[:n] & self.has[col][:n]
        count = int(np.count_nonzero(valid))
        if count == 0:
            return []
        ann = self.ann[col]
        slots: np.ndarray | None = None
        if ann is not None and count > 4 * limit:
            share = count / max(1, len(ann))
            # the int8 graph only proposes: over-fetch so exact rescoring sees the true top-k
            over = self.cfg.get_int("hot_ann_oversample")
            fetch = math.ceil(limit * over / max(share, 1e-9))
            if fetch <= self.cfg.get_int("hot_ann_max_fetch"):
                got = ann.search(qvec, max(fetch, limit * over))
                got = got[(got >= 0) & (got < n)]
                got = got[valid[got]]
                if len(got) >= limit:
                    slots = got
        if slots is None:
            m = min(count, limit * self.layout.rescore)
            if count * 4 < n:
                slots = np.flatnonzero(valid)
                if count <= m:  # every one is rescored, in slot order: no codes to read
                    approx = np.zeros(count, dtype=np.float32)
                else:
                    approx = self.codes[col].scores(encode_query(qvec, self.layout), slots)
            else:
                approx = self.codes[col].scan(encode_query(qvec, self.layout), valid)
                approx[~valid] = -np.inf
            best = (
                np.argpartition(-approx, m - 1)[:m] if len(approx) > m else np.arange(len(approx))
            )
            best = best[np.isfinite(approx[best])]
            slots = slots[best] if slots is not None else best
        unit = self.unit_vectors(col, slots)
        scores = unit @ qvec
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        if keep is not None:
            keep.update(zip(slots[top].tolist(), unit[top], strict=True))
        return [(int(slots[t]), float(scores[t])) for t in top]

    def texts(self) -> list[str | None]:
        """Every slot's ``search_text`` as one list (a string per row: not for the query path)."""
        return self.rows.column("search_text")

    def text_chunks(self) -> Iterator[list[str | None]]:
        """Every slot's ``search_text`` in slot order, a chunk of slots at a time (the substring
        channel's rebuild: no string per row alive beyond a chunk's)."""
        return self.rows.column_chunks("search_text")
