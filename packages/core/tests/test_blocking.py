"""BlockingCore: every MemoryCore method mirrored; safe from many threads at once."""

from __future__ import annotations

import inspect
import threading
import time
from pathlib import Path

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, TurnInput, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.contract.protocol import MemoryCore
from stratamem.core.blocking import BlockingCore

NS = Namespace(agent_kind="hermes")


def test_every_protocol_method_is_mirrored_synchronously() -> None:
    for name, member in inspect.getmembers(MemoryCore):
        if name.startswith("_") or not callable(member):
            continue
        mirrored = getattr(BlockingCore, name, None)
        assert mirrored is not None, name
        assert not inspect.iscoroutinefunction(mirrored), name
        proto_params = list(inspect.signature(member).parameters)
        assert list(inspect.signature(mirrored).parameters) == proto_params, name


def test_turns_from_many_threads_are_all_captured_and_searchable(tmp_path: Path) -> None:
    with BlockingCore.open(tmp_path, embedding__provider="none") as core:
        errors: list[BaseException] = []

        def worker(n: int) -> None:
            try:
                for i in range(5):
                    t = int(time.time() * 1000)
                    sid = f"thread-{n}"
                    core.turn_start(
                        TurnInput(
                            agent="hermes", session_id=sid, user_text=f"pelican fact {n}-{i}", ts=t
                        )
                    )
                    core.turn_end(
                        TurnResult(agent="hermes", session_id=sid, agent_text=f"ok {n}-{i}", ts=t)
                    )
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert not errors
        assert len(core.list_traces(ListQuery(limit=100, namespace=NS))) == 20
        res = core.search(RetrievalQuery(agent="hermes", query="pelican fact 2-3", namespace=NS))
        assert res.hits
        assert core.health().ok
        events = list(core.events(since_seq=0, types=("turn.captured",), timeout=0.5))
        assert len(events) == 20
    with pytest.raises(StratamemError) as err:
        core.health()
    assert err.value.code == "already_shut_down"


def test_open_failure_is_raised_in_the_calling_thread(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("retrieval: [broken\n")
    with pytest.raises(StratamemError) as err:
        BlockingCore.open(tmp_path, embedding__provider="none")
    assert err.value.code == "config_invalid"


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "stratamem-core-loop"]


def test_a_failed_open_leaves_no_loop_thread_behind(tmp_path: Path) -> None:
    # a host with a bad config used to wait out the 10 s join most times, with the loop thread
    # left running for good; five failed opens in a row make a leak near-certain to show
    (tmp_path / "config.yaml").write_text("retrieval: [broken\n")
    before = set(_loop_threads())
    for _ in range(5):
        with pytest.raises(StratamemError):
            BlockingCore.open(tmp_path, embedding__provider="none")
    assert [t for t in _loop_threads() if t not in before and t.is_alive()] == []
