"""The word store holds one model's word vectors: after the home is re-embedded with another
model (``stratamem reembed``), a store from the old one is dropped and built again in the
background, never read as the new model's. Its cosines with the new query vectors would be noise
(same width), or, with another width, its vectors file would be cut into the wrong rows (the
"torn append" repair). Real LanceDB, two bag-of-letters embedders (a plugin's kind, not ours)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from capture_support import capture_texts

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.vocab.store import WordStore

NS = Namespace("chat", "ann")
T0 = 1_700_000_000_000
TALK = [
    "Ann: I played on my Xbox until midnight.",
    "Ann: The controller of the Xbox needs new batteries.",
    "Ann: I spent the afternoon painting the garden fence.",
    "Ann: My sister plays the violin in an orchestra.",
]


class Letters:
    """Bag-of-letters vectors; ``shift`` rotates the alphabet (another model, same width)."""

    name = "letters"
    dimension = 26

    def __init__(self, shift: int) -> None:
        self.shift = shift
        self.model = f"letters-rot{shift}"

    def one(self, text: str) -> np.ndarray:
        v = np.zeros(26, dtype=np.float32)
        for ch in text.lower():
            if "a" <= ch <= "z":
                v[(ord(ch) - 97 + self.shift) % 26] += 1
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.one(t) for t in texts]) if texts else np.zeros((0, 26), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.one(text)


async def _capture(home: Path, emb: Any) -> None:
    core = await open_local_core(home, embedder=emb)
    try:
        await capture_texts(core, TALK, NS, T0)
    finally:
        await core.shutdown()


def _cos(a: np.ndarray | None, b: np.ndarray) -> float:
    assert a is not None
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


async def test_a_store_of_another_model_is_embedded_again(tmp_path: Path) -> None:
    old, new = Letters(0), Letters(7)
    await _capture(tmp_path, old)
    core = await open_local_core(tmp_path, embedder=new)
    try:
        vocab = core.services.vocab
        st = await vocab.store()
        assert not st.complete  # the old model's vectors are not served
        await core.search(
            RetrievalQuery(agent="chat", query="Who played?", namespace=NS, top_k=TopK(0, 5, 0))
        )
        assert vocab._build is not None
        await vocab._build
        st = await vocab.store()
        assert st.complete and "xbox" in st.index and st.memories == len(TALK)
        assert _cos(st.vector("violin"), new.one("violin")) > 0.99
        assert _cos(st.vector("violin"), old.one("violin")) < 0.9
    finally:
        await core.shutdown()
    again = WordStore.load(tmp_path / "data" / "vocab", 26, 8, new.model)
    assert again.complete and again.model == new.model


async def test_a_store_saved_before_models_were_recorded_is_kept(tmp_path: Path) -> None:
    emb = Letters(0)
    await _capture(tmp_path, emb)
    folder = tmp_path / "data" / "vocab"
    with np.load(folder / "state.npz") as z:
        saved = {k: z[k] for k in z.files if k != "model"}
    np.savez(folder / "state.npz", **saved)
    st = WordStore.load(folder, 26, 8, "another-model")
    assert st.complete and "violin" in st.index
