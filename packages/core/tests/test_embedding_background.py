"""The background helper (``embedding/background.py``): a niced thread with its own session of the
local model shares big embedding calls with its caller. Its thread runs at the configured nice,
the tokenizer's threads and the caller do not, it gives the same vectors, the caller never waits
for it, and where the OS refuses the nice there is no helper (a log line says so)."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.core.config import load_config
from stratamem.core.embedding import background, load_embedder
from stratamem.core.embedding.background import lower_thread_priority, thread_nice
from stratamem.core.embedding.local import (
    LocalOnnxEmbedder,
    create_local_embedder,
    shipped_model_path,
    vendored_tokenizer_path,
)
from stratamem.core.engine.assemble import open_local_core

TEXTS = [
    f"turn {i}: the user asked about the otter den by the river " * (1 + i % 6) for i in range(70)
]


def _refusal() -> str | None:
    """Why this OS will not lower one thread's priority (``None``: it will), probed on a thread
    that ends at once."""
    out: dict[str, str] = {}

    def probe() -> None:
        try:
            lower_thread_priority(1)
        except (OSError, NotImplementedError) as exc:
            out["why"] = f"{type(exc).__name__}: {exc}"

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    return out.get("why")


def _tasks() -> dict[int, int]:
    """This process's threads: OS thread id -> nice (``/proc/self/task/*/stat``, field 19)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as fh:
                stat = fh.read()
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
        out[int(tid)] = int(stat[stat.rindex(")") + 2 :].split()[16])
    return out


def _make(nice: int) -> LocalOnnxEmbedder:
    return LocalOnnxEmbedder(shipped_model_path(), vendored_tokenizer_path(), background_nice=nice)


@pytest.fixture(scope="module")
def helped() -> Any:
    why = _refusal()
    if why is not None:
        pytest.skip(f"this OS does not lower a thread's priority: {why}")
    before = _tasks()
    emb = _make(7)
    assert emb.background is not None
    emb.embed_documents(TEXTS)  # five pieces of 16: the helper's session runs
    return emb, before, _tasks()


def test_the_helpers_thread_runs_at_the_configured_nice_and_nothing_else(helped: Any) -> None:
    emb, before, after = helped
    lane = emb.background
    mine = thread_nice()
    expected = min(19, mine + 7)
    assert lane.nice == expected and after[lane.native_id] == expected
    # the helper's session has one intra-op thread (its own): no other thread is niced; the
    # tokenizer's workers (started before the helper: recall uses them) and the caller are not
    new = {tid: n for tid, n in after.items() if tid not in before}
    assert [tid for tid, n in new.items() if n == expected] == [lane.native_id]
    assert all(n == mine for tid, n in new.items() if tid != lane.native_id)
    assert after[threading.get_native_id()] == mine
    assert lane.worker._session.get_session_options().intra_op_num_threads == 1


def test_the_helper_gives_the_query_paths_vectors(helped: Any) -> None:
    # the helper's vectors and the shared session's must be the same numbers (the embedding
    # cache and every cosine threshold assume one model)
    emb, _, _ = helped
    plain = create_local_embedder({})
    assert plain.background is None
    np.testing.assert_array_equal(emb.embed_documents(TEXTS), plain.embed_documents(TEXTS))
    on_helper = emb.background.executor.submit(emb.background.worker.embed_documents, TEXTS)
    np.testing.assert_array_equal(on_helper.result(), plain.embed_documents(TEXTS))
    np.testing.assert_array_equal(emb.embed_query(TEXTS[3]), plain.embed_query(TEXTS[3]))


def test_share_runs_pieces_on_both_threads_in_order(helped: Any) -> None:
    lane = helped[0].background
    took = threading.Event()

    def run(piece: int, worker: Any) -> tuple[int, int]:
        if worker is not None:
            took.set()
        else:
            took.wait(30)  # the caller's pieces wait until the helper has taken one
        return piece, threading.get_native_id()

    out = lane.share(list(range(6)), run)
    assert [p for p, _ in out] == list(range(6))
    assert {t for _, t in out} == {threading.get_native_id(), lane.native_id}


def test_the_caller_never_waits_for_a_stuck_helper(helped: Any) -> None:
    # a helper that never gets a core (a busy machine, a nice of 19) holds its piece; the caller
    # computes that piece too and returns
    lane = helped[0].background
    entered, release = threading.Event(), threading.Event()

    def run(piece: int, worker: Any) -> tuple[int, str]:
        if worker is not None:
            entered.set()
            release.wait(30)
            return piece, "helper"
        entered.wait(30)
        return piece, "caller"

    redone = lane.redone
    try:
        out = lane.share(list(range(4)), run)
    finally:
        release.set()
    assert out == [(p, "caller") for p in range(4)]
    assert lane.redone == redone + 1


async def test_the_writer_stores_the_helpers_vectors(tmp_path: Path, helped: Any) -> None:
    emb, _, _ = helped
    core = await open_local_core(tmp_path, embedder=emb)
    ns = Namespace(agent_kind="hermes")
    acks = []
    try:
        for i in range(40):  # back to back: the writer's batches hold more than one piece
            acks.append(
                await core.turn_end(
                    TurnResult(
                        agent="hermes",
                        session_id=f"s{i // 8}",
                        user_text=f"note {i}: the otter den is under the {i}th willow",
                        agent_text="Noted.",
                        ts=1_735_000_000_000 + i,
                        namespace=ns,
                    )
                )
            )
        await core.flush(60)
        res = await core.search(
            RetrievalQuery(agent="hermes", query="otter den under the 39th willow", namespace=ns)
        )
        assert res.hits and res.hits[0].ref_id == acks[-1].trace_id
    finally:
        await core.shutdown()


@pytest.mark.parametrize("how", ["refused", "ignored"])
def test_a_refused_nice_means_no_helper_and_a_log_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    # the OS is the one thing replaced here: a sandbox that refuses ``setpriority`` (EPERM), or
    # one that accepts it and leaves the thread as it was
    def refuse(which: int, who: int, prio: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    def ignore(which: int, who: int, prio: int) -> None:
        return None

    monkeypatch.setattr(background.os, "setpriority", refuse if how == "refused" else ignore)
    with caplog.at_level(logging.WARNING):
        emb = _make(5)
    assert emb.background is None
    assert any("embedding.background_refused" in r.getMessage() for r in caplog.records)
    plain = create_local_embedder({})
    np.testing.assert_array_equal(
        emb.embed_documents(TEXTS[:40]), plain.embed_documents(TEXTS[:40])
    )


def test_the_helper_is_off_by_default_and_on_by_config() -> None:
    assert getattr(load_embedder({}).inner, "background", None) is None
    if _refusal() is None:
        on = create_local_embedder({"background_helper": True, "background_nice": 12})
        assert on.background is not None and on.background.nice == min(19, thread_nice() + 12)
        assert create_local_embedder({"background_helper": True, "background_nice": 12}) is on


def test_background_keys_are_table_keys_with_ranges(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "embedding:\n  background_helper: true\n  background_nice: 19\n"
    )
    cfg = load_config(tmp_path)["embedding"]
    assert (cfg["background_helper"], cfg["background_nice"]) == (True, 19)
    bad = (
        "background_nice: 0",
        "background_nice: 20",
        "background_nice: low",
        "background_helper: 3",
    )
    for line in bad:
        (tmp_path / "config.yaml").write_text(f"embedding:\n  {line}\n")
        with pytest.raises(StratamemError) as err:
            load_config(tmp_path)
        assert err.value.code == "config_invalid"
        assert err.value.details["key"] == "embedding." + line.split(":")[0]
