"""The hot index's vectors as int8 codes plus an int4 residual: 0.38× float32's bytes, scanned by a
SIMD int8 kernel, rescored at ~12-bit precision. The codes and scales (0.25× float32) are held in
memory; the residual, read only for the candidates, in a side file (``slotfile.py``).

A unit vector ``v`` is stored as ``q8 = rint(v · 127 / max|v|)`` (a scale per row: on MiniLM it
ranked closer to float32 than any fixed scale for unit vectors), the rounding error of each
component as a signed 4-bit step of 1/14 (two per byte), and one float32 per row that makes
``(q8 + r4/14) · scale`` a unit vector. A scan quantises the query the same way and takes int8 dot
products with int32 accumulation (numkong, usearch's own kernel library: AVX-512 VNNI / AMX /
NEON where present) times the row scales; the best candidates (and the HNSW graph's proposals) are
rescored with the float32 query against the codes plus residual. The int8 codes alone moved
near-ties: recall@10 vs exact float32 0.983-0.985 at 100k on the bench corpus, 0.96-0.97 after
the graph; with the residual the rescoring is float32's to ~1e-4 (bench/results/hot-int8.md).

``storage.hot_vector_dtype = "f32"`` keeps float32 rows instead (no residual, scale 1, a BLAS
scan): the same code path, exact scores, 2.6 times the memory.
"""

from __future__ import annotations

import numkong as nk
import numpy as np

#: int8 magnitude of each row's largest component
Q_MAX = 127.0
#: residual steps per int8 step (signed 4-bit values in -7..7)
RES = 14.0
#: ``storage.hot_vector_dtype`` -> the codes' dtype
DTYPES: dict[str, np.dtype] = {"i8": np.dtype(np.int8), "f32": np.dtype(np.float32)}


def dtype_of(name: str) -> np.dtype:
    got = DTYPES.get(name)
    if got is None:
        raise ValueError(f"storage.hot_vector_dtype must be one of {sorted(DTYPES)}, not {name!r}")
    return got


def resid_width(dim: int, dtype: np.dtype) -> int:
    """Bytes of residual per row (two 4-bit values a byte; none for float32 rows)."""
    return (dim + 1) // 2 if dtype == np.int8 else 0


def _pack(r4: np.ndarray) -> np.ndarray:
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


def quantize_rows(unit: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit float32 rows (k, dim), none zero, as (codes, residuals, scales) of ``dtype``.

    Element-wise per row, so one row quantised alone equals the same row quantised in a batch
    (a load and the write-through path leave the same bytes)."""
    k = len(unit)
    if dtype != np.int8:
        return unit.astype(np.float32), np.zeros((k, 0), np.uint8), np.ones(k, np.float32)
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


def encode_query(qvec: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The query in the codes' dtype (int8: its own scale is the same for every row, so the
    ranking drops it)."""
    if dtype != np.int8:
        return qvec.astype(np.float32, copy=False)
    peak = float(np.abs(qvec).max())
    if not peak or not np.isfinite(peak):
        return np.zeros(qvec.shape, dtype=np.int8)
    return np.rint(qvec * (Q_MAX / peak)).astype(np.int8)


def dots(query: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``codes @ query`` as float32; int8 with int32 accumulation (exact: |sum| ≤ 127²·dim < 2²⁴
    for dim ≤ 1040; beyond that float32 rounds the last bits of a sum far above any near-tie)."""
    if codes.dtype != np.int8:
        out_f: np.ndarray = codes @ query
        return out_f
    out = np.empty((1, len(codes)), dtype=np.float32)
    if len(codes):
        nk.cdist(query[None, :], np.ascontiguousarray(codes), metric="dot", out=out)
    row: np.ndarray = out[0]
    return row


def unit_rows(codes: np.ndarray, resid: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Stored rows (codes + residual) as float32 unit vectors: a new array the caller owns."""
    out: np.ndarray = codes.astype(np.float32)
    if codes.dtype == np.int8 and len(codes):
        out += _unpack(resid, codes.shape[1]).astype(np.float32) / np.float32(RES)
    out *= scale[:, None]
    return out
