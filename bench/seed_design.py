"""The seed system's recall design, rebuilt over the same vectors: the MemOS local plugin keeps
chunks and their embeddings in SQLite and answers a query with a brute-force cosine scan of the
namespace's rows. This module imports only sqlite3 and numpy, so a process that runs it alone
(``bench.footprint``) measures the design's own memory, not the benchmark's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

OWNER = "bench"


class SeedDesign:
    """Each query reads the namespace's embeddings from SQLite and scans them with numpy. The
    plugin itself is TypeScript; this is its design in Python, measured side by side (the issue
    allows either)."""

    def __init__(self, path: Path, ids: np.ndarray, matrix: np.ndarray, owner: str = OWNER):
        self.owner = owner
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE chunks(id TEXT PRIMARY KEY, owner TEXT, vec BLOB)")
        self.db.executemany(
            "INSERT INTO chunks VALUES (?, ?, ?)",
            ((str(i), owner, v.tobytes()) for i, v in zip(ids, matrix, strict=True)),
        )
        self.db.commit()
        self.dim = matrix.shape[1]

    def search(self, qvec: np.ndarray, k: int) -> list[str]:
        rows = self.db.execute(
            "SELECT id, vec FROM chunks WHERE owner = ?", (self.owner,)
        ).fetchall()
        if not rows:
            return []
        mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, self.dim)
        scores = mat @ qvec
        top = np.argsort(-scores)[:k]
        return [rows[i][0] for i in top]

    def close(self) -> None:
        self.db.close()
