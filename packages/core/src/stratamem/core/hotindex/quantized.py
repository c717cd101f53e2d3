"""The hot index's vectors in three layouts (``storage.hot_vector_dtype``), one code path.

``"i8"`` (session 7): a unit vector ``v`` is stored as ``q8 = rint(v · 127 / max|v|)`` (a scale per
row: on MiniLM it ranked closer to float32 than any fixed scale), the rounding error of each
component as a signed 4-bit step of 1/14 (two per byte), and one float32 per row that makes
``(q8 + r4/14) · scale`` a unit vector. The int8 codes and the scale are held in memory
(388 B per 384-d row) and scanned by numkong's int8 kernel (AVX-512 VNNI / AMX / NEON); the
residual, read only for the candidates, is in a side file (``slotfile.py``). The scan's best
``rescore`` × limit (and the HNSW graph's proposals) are rescored with the float32 query against
codes plus residual: float32's scores to ~1e-4 (bench/results/hot-int8.md).

``"i4"`` (session 13): the same int8 codes, residual and scale, all three in the side file (one
record, one ``pread`` per candidate); in memory only a 4-bit code per component (two per byte,
``rint(v / step)`` clipped to -8..7 with ``step = STEP4 × rms(v)``) and the inverse norm of those
codes: 196 B per 384-d row. The first stage scans the 4-bit codes (numkong's int4 kernel) and
ranks by their cosine; its best ``rescore`` × limit are rescored exactly as ``"i8"`` rescores
(the same bytes, so the same scores). A clipped step ranked closer than a step from ``max|v|``
(recall of the exact top 20 in the best 80 at 100k: 1.000 vs 0.954; bench/results/hot-int4.md).

``"f32"``: float32 rows (no side file, scale 1, a BLAS scan): exact scores, 4 times ``"i8"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numkong as nk
import numpy as np

#: int8 magnitude of each row's largest component
Q_MAX = 127.0
#: residual steps per int8 step (signed 4-bit values in -7..7)
RES = 14.0
#: ``"i4"``'s first-stage step in units of the row's rms (a unit row's rms is 1/sqrt(dim)):
#: 0.3 clips ~1.6 % of a Gaussian row's components at ±2.4 rms; it ranked as well as 0.335
#: (Lloyd-Max's uniform step for 16 levels) and better than 0.4-0.45 or a step from max|v|
STEP4 = 0.3


@dataclass(frozen=True)
class Layout:
    """One ``storage.hot_vector_dtype``: what is held in memory and what in the side file."""

    name: str
    #: the in-memory codes' dtype (``"i4"``: uint8, two 4-bit codes a byte)
    codes: np.dtype
    #: a first-stage scan's best ``rescore`` × limit are rescored from the side file
    rescore: int

    def code_width(self, dim: int) -> int:
        """Columns of the in-memory code matrix."""
        return (dim + 1) // 2 if self.name == "i4" else dim

    def file_width(self, dim: int) -> int:
        """Bytes per row in the side file: ``"i8"`` the residual; ``"i4"`` int8 codes, residual
        and the float32 scale (one record); ``"f32"`` nothing."""
        if self.name == "i8":
            return (dim + 1) // 2
        if self.name == "i4":
            return dim + (dim + 1) // 2 + 4
        return 0


LAYOUTS: dict[str, Layout] = {
    "i4": Layout("i4", np.dtype(np.uint8), 4),
    "i8": Layout("i8", np.dtype(np.int8), 4),
    "f32": Layout("f32", np.dtype(np.float32), 4),
}


def layout_of(name: str) -> Layout:
    got = LAYOUTS.get(name)
    if got is None:
        raise ValueError(f"storage.hot_vector_dtype must be one of {sorted(LAYOUTS)}, not {name!r}")
    return got


def _pack(r4: np.ndarray) -> np.ndarray:
    """Signed 4-bit values (k, dim) two a byte, the even column in the low nibble (numkong's
    ``int4`` order)."""
    if r4.shape[1] % 2:
        r4 = np.pad(r4, ((0, 0), (0, 1)))
    lo = r4[:, 0::2].astype(np.uint8) & 0x0F
    hi = r4[:, 1::2].astype(np.uint8) << 4
    out: np.ndarray = lo | hi
    return out


def _unpack(packed: np.ndarray, dim: int) -> np.ndarray:
    p = packed.view(np.int8)
    out = np.empty((len(p), 2 * p.shape[1]), dtype=np.int8)
    out[:, 0::2] = np.left_shift(p, 4) >> 4  # sign-extends the low nibble
    out[:, 1::2] = p >> 4
    return out[:, :dim]


def _int8_rows(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int8 codes, packed residuals, scales) of unit rows: ``"i8"``'s bytes."""
    # float32 temporaries only, reused in place (a load quantises 8,192-row batches)
    x = np.abs(unit).max(axis=1, keepdims=True)
    np.divide(np.float32(Q_MAX), x, out=x)
    x = unit * x
    q8 = np.rint(x)
    x -= q8
    x *= np.float32(RES)
    r4 = np.clip(np.rint(x, out=x), -7, 7, out=x).astype(np.int8)
    x = r4.astype(np.float32)
    x /= np.float32(RES)
    x += q8  # the stored vector, before its scale
    norm = np.sqrt(np.einsum("ij,ij->i", x, x))
    return q8.astype(np.int8), _pack(r4), (np.float32(1.0) / norm).astype(np.float32)


def _int4_codes(x: np.ndarray) -> np.ndarray:
    """Rows (k, dim) as signed 4-bit codes ``rint(x / (STEP4 · rms))`` clipped to -8..7."""
    rms = np.sqrt(np.einsum("ij,ij->i", x, x) / x.shape[1])[:, None]
    rms[rms == 0] = 1.0
    c4: np.ndarray = np.clip(np.rint(x / (np.float32(STEP4) * rms)), -8, 7).astype(np.int8)
    return c4


def quantize_rows(unit: np.ndarray, layout: Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit float32 rows (k, dim), none zero, as (in-memory codes, scales, side-file records).

    Element-wise per row, so one row quantised alone equals the same row quantised in a batch
    (a load and the write-through path leave the same bytes)."""
    k = len(unit)
    if layout.name == "f32":
        return unit.astype(np.float32), np.ones(k, np.float32), np.zeros((k, 0), np.uint8)
    q8, r4, scale = _int8_rows(unit)
    if layout.name == "i8":
        return q8, scale, r4
    c4 = _int4_codes(unit)
    n4 = np.sqrt(np.einsum("ij,ij->i", c4, c4, dtype=np.float32))
    n4[n4 == 0] = 1.0
    records = np.hstack([q8.view(np.uint8), r4, scale[:, None].view(np.uint8)])
    return _pack(c4), (np.float32(1.0) / n4).astype(np.float32), records


def encode_query(qvec: np.ndarray, layout: Layout) -> np.ndarray:
    """The query in the codes' form (int8 / int4: its own scale is the same for every row, so
    the ranking drops it)."""
    if layout.name == "f32":
        return qvec.astype(np.float32, copy=False)
    peak = float(np.abs(qvec).max())
    if not peak or not np.isfinite(peak):
        return np.zeros(layout.code_width(len(qvec)), dtype=layout.codes)
    if layout.name == "i4":
        # ``_int4_codes`` and ``_pack`` for one row in fewer numpy calls (12 vs 15 us). Not their
        # bits: the rms here is float64, so a component on a rounding boundary can land a step
        # apart (5 of 60k random unit queries); only the first stage's pool sees it
        q = qvec.astype(np.float32, copy=False)
        c = np.rint(q * np.float32(1.0 / (STEP4 * float(np.sqrt(np.dot(q, q) / len(q))))))
        u = np.clip(c, -8, 7, out=c).astype(np.int8).view(np.uint8)
        if len(u) % 2:
            u = np.append(u, np.uint8(0))
        packed: np.ndarray = (u[0::2] & 0x0F) | (u[1::2] << 4)
        return packed
    return np.rint(qvec * (Q_MAX / peak)).astype(np.int8)


def dots(query: np.ndarray, codes: np.ndarray, layout: Layout) -> np.ndarray:
    """``codes @ query`` as float32; int8 / int4 with int32 accumulation (exact: |sum| ≤ 127²·dim
    < 2²⁴ for dim ≤ 1040; beyond that float32 rounds the last bits of a sum far above any
    near-tie)."""
    if layout.name == "f32":
        out_f: np.ndarray = codes @ query
        return out_f
    out = np.empty((1, len(codes)), dtype=np.float32)
    if len(codes):
        mat = np.ascontiguousarray(codes)
        if layout.name == "i4":
            nk.cdist(query[None, :], mat, metric="dot", dtype="int4", out=out)
        else:
            nk.cdist(query[None, :], mat, metric="dot", out=out)
    row: np.ndarray = out[0]
    return row


def unit_rows(
    codes: np.ndarray, scales: np.ndarray, records: np.ndarray, layout: Layout, dim: int
) -> np.ndarray:
    """Stored rows as float32 unit vectors (a new array the caller owns): ``"i8"`` from the
    in-memory codes and scales plus the residuals read, ``"i4"`` from the records read alone
    (the same arithmetic on the same bytes: the same vectors)."""
    if layout.name == "i4":
        q8 = records[:, :dim].view(np.int8)
        scale = np.ascontiguousarray(records[:, -4:]).view(np.float32).reshape(-1)
        return unit_rows(q8, scale, records[:, dim:-4], LAYOUTS["i8"], dim)
    out: np.ndarray = codes.astype(np.float32)
    if layout.name == "i8" and len(codes):
        out += _unpack(records, dim).astype(np.float32) / np.float32(RES)
    out *= scales[:, None]
    return out
