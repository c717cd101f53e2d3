"""What every embedder is: a name, a model, a dimension read from the model, and L2-normalised float32 rows.

Helpers shared by the built-in embedders (normalisation, input checks, the dimension guard) live here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from stratamem.contract.errors import ErrorCode, StratamemError

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """A sentence embedder. Rows are float32 and L2-normalised, so a dot product is the cosine."""

    name: str
    model: str

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """``(len(texts), dimension)`` float32, L2-normalised."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """``(dimension,)`` float32, L2-normalised."""
        ...


EmbedderFactory = Callable[[Mapping[str, Any]], Embedder]


def is_asymmetric(embedder: Any) -> bool:
    """True when the embedder marks itself ``asymmetric``: a query and a stored text are embedded
    differently (E5's ``query: `` / ``passage: `` prefixes, an instruction per role), so a query
    must go through ``embed_query``, never ``embed_documents``. Optional (not in the protocol):
    an embedder without the attribute embeds both roles alike, as MiniLM does."""
    return bool(getattr(embedder, "asymmetric", False))


def l2_normalise(matrix: npt.NDArray[Any]) -> Vectors:
    """Rows scaled to unit length in float32; an all-zero row stays zero."""
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True).astype(np.float32)
    norms[norms == 0] = np.float32(1.0)
    out: Vectors = (m / norms).astype(np.float32, copy=False)
    return out


def check_texts(texts: Sequence[str]) -> list[str]:
    """A list copy of ``texts``; anything that is not a ``str`` is an ``invalid_argument``."""
    if isinstance(texts, str):
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, "embed_documents takes a sequence of strings, not a string"
        )
    items = list(texts)
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise StratamemError(
                ErrorCode.INVALID_ARGUMENT,
                f"text {i} is {type(t).__name__}, not str",
                {"index": i},
            )
    return items


def check_text(text: str) -> str:
    if not isinstance(text, str):
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, f"query text is {type(text).__name__}, not str"
        )
    return text


def ensure_dimension(expected: int, embedder: Embedder, *, table: str | None = None) -> None:
    """Raise ``embedding_dimension_mismatch`` (with the way out) when a stored dimension differs."""
    actual = embedder.dimension
    if int(expected) != int(actual):
        where = f"table {table!r}" if table else "the store"
        raise StratamemError(
            ErrorCode.EMBEDDING_DIMENSION_MISMATCH,
            f"{where} holds {expected}-d vectors but embedder {embedder.name}:{embedder.model} "
            f"produces {actual}-d; switch back to the old model or run `stratamem reembed` "
            "to re-embed every row with the new one",
            {
                "expected": int(expected),
                "actual": int(actual),
                "provider": embedder.name,
                "model": embedder.model,
                "table": table,
                "fix": "stratamem reembed",
            },
        )
