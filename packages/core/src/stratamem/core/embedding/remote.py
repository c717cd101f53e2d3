"""The OpenAI-compatible HTTP embedder (``POST /v1/embeddings``) for hosted or self-hosted models.

The dimension is what the server returns (probed once when asked before the first call).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.config.settings import Section
from stratamem.core.embedding.base import Vectors, check_text, check_texts, l2_normalise
from stratamem.core.llm.transport import HttpError, join_url, post_json
from stratamem.core.telemetry import get_logger, span

log = get_logger("embedding")


class OpenAICompatibleEmbedder:
    name = "openai_compatible"

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        api_key: str = "",
        timeout_s: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 32,
        dimension: int | None = None,
        base_backoff_s: float = 0.25,
    ) -> None:
        if not endpoint:
            raise StratamemError(
                ErrorCode.CONFIG_INVALID,
                "embedding.endpoint is required for provider openai_compatible",
                {"key": "embedding.endpoint"},
            )
        if not model:
            raise StratamemError(
                ErrorCode.CONFIG_INVALID,
                "embedding.model is required for provider openai_compatible",
                {"key": "embedding.model"},
            )
        self.model = model
        self.url = join_url(endpoint, "/embeddings")
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.batch_size = max(1, batch_size)
        self.base_backoff_s = base_backoff_s
        self._dimension = dimension
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    def _request(self, texts: list[str]) -> Vectors:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        with span("embedding.http", provider=self.name, model=self.model, count=len(texts)) as sp:
            try:
                res = post_json(
                    self.url,
                    {"model": self.model, "input": texts, "encoding_format": "float"},
                    headers=headers,
                    timeout_s=self.timeout_s,
                    max_retries=self.max_retries,
                    base_backoff_s=self.base_backoff_s,
                )
            except HttpError as err:
                log.warning("embedding request failed", status=err.status, error=str(err))
                raise StratamemError(
                    ErrorCode.EMBEDDING_UNAVAILABLE,
                    f"embedding endpoint failed: {err}",
                    {
                        "provider": self.name,
                        "url": self.url,
                        "status": err.status,
                        "attempts": err.attempts,
                    },
                ) from err
            sp.set_attribute("attempts", res.attempts)
        rows = self._parse(res.data, len(texts))
        if self._dimension is not None and rows.shape[1] != self._dimension:
            raise StratamemError(
                ErrorCode.EMBEDDING_DIMENSION_MISMATCH,
                f"{self.url} returned {rows.shape[1]}-d vectors, expected {self._dimension}",
                {"expected": self._dimension, "actual": int(rows.shape[1])},
            )
        return rows

    def _parse(self, data: Any, n: int) -> Vectors:
        try:
            items = sorted(data["data"], key=lambda d: int(d.get("index", 0)))
            rows = np.asarray([d["embedding"] for d in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as err:
            raise StratamemError(
                ErrorCode.EMBEDDING_UNAVAILABLE,
                f"malformed embeddings answer from {self.url}: {err}",
                {"url": self.url},
            ) from err
        if rows.ndim != 2 or rows.shape[0] != n or rows.shape[1] == 0:
            raise StratamemError(
                ErrorCode.EMBEDDING_UNAVAILABLE,
                f"{self.url} returned {rows.shape} for {n} inputs",
                {"url": self.url},
            )
        return l2_normalise(rows)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._request(items[i : i + self.batch_size])
            for i in range(0, len(items), self.batch_size)
        ]
        out = np.concatenate(parts, axis=0)
        if self._dimension is None:
            self._dimension = int(out.shape[1])
        return out

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self.embed_documents([check_text(text)])[0]
        return row


def create_openai_embedder(config: Mapping[str, Any]) -> OpenAICompatibleEmbedder:
    emb = Section("embedding", config)
    dim = config.get("dimension") or config.get("dimensions")
    return OpenAICompatibleEmbedder(
        str(config.get("endpoint") or ""),
        str(config.get("model") or ""),
        api_key=str(config.get("api_key") or ""),
        timeout_s=float(config.get("timeout_ms") or emb["timeout_ms"]) / 1000.0,
        max_retries=emb.get_int("max_retries"),
        batch_size=int(config.get("batch_size") or emb["batch_size"]),
        dimension=int(dim) if dim else None,
    )
