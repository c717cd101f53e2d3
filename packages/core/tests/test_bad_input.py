"""Bad input (issue 3): each case is a typed error or a documented degraded result, and nothing
stored changes (row counts, journal, episodes and sessions compared before/after)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.dtos import (
    ListQuery,
    Namespace,
    RetrievalQuery,
    ToolCall,
    TopK,
    TurnInput,
    TurnResult,
)
from stratamem.contract.errors import StratamemError
from stratamem.contract.hostkit.home import socket_path_for
from stratamem.contract.remote import RemoteCore
from stratamem.core import LocalCore, open_core
from stratamem.core.storage.ownership import Scope

NS = Namespace(agent_kind="hermes")
SURROGATE = b"caf\xe9 ok".decode("utf-8", errors="surrogateescape")  # invalid UTF-8 from bytes


def now() -> int:
    return int(time.time() * 1000)


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[LocalCore]:
    async with open_core(tmp_path, embedding__provider="none", capture__max_input_chars=5000) as c:
        t = now()
        await c.turn_start(TurnInput(agent="hermes", session_id="s", user_text="seed fact", ts=t))
        await c.turn_end(TurnResult(agent="hermes", session_id="s", agent_text="seeded", ts=t))
        await c.flush(10)
        yield c


async def _snapshot(core: LocalCore) -> dict[str, Any]:
    counts = {
        t: await core.store.count(t, Scope.everything("test"))
        for t in ("traces", "policies", "world_models", "skills")
    }
    for table in ("sessions", "episodes", "episode_turns", "journal", "feedback"):
        counts[table] = core.db.query(f"SELECT count(*) FROM {table}")[0][0]
    counts["episode_rows"] = [tuple(r) for r in core.db.query("SELECT * FROM episodes")]
    return counts


async def _rejected(core: LocalCore, coro: Any, code: str = "invalid_argument") -> StratamemError:
    before = await _snapshot(core)
    with pytest.raises(StratamemError) as err:
        await coro
    assert err.value.code == code, err.value
    assert await _snapshot(core) == before
    return err.value


@pytest.mark.parametrize("text", ["", "   \n\t "])
async def test_empty_or_whitespace_user_text(core: LocalCore, text: str) -> None:
    e = await _rejected(
        core, core.turn_start(TurnInput(agent="hermes", session_id="s", user_text=text, ts=now()))
    )
    assert "user_text" in e.message


async def test_oversized_user_text(core: LocalCore) -> None:
    e = await _rejected(
        core,
        core.turn_start(TurnInput(agent="hermes", session_id="s", user_text="x" * 5001, ts=now())),
    )
    assert e.details["max"] == 5000


async def test_invalid_utf8_text(core: LocalCore) -> None:
    await _rejected(
        core,
        core.turn_start(TurnInput(agent="hermes", session_id="s", user_text=SURROGATE, ts=now())),
    )
    await _rejected(
        core,
        core.turn_end(TurnResult(agent="hermes", session_id="s", agent_text=SURROGATE, ts=now())),
    )
    await _rejected(core, core.search(RetrievalQuery(agent="hermes", query=SURROGATE)))


async def test_unknown_ids(core: LocalCore) -> None:
    await _rejected(core, core.close_session("se_nope"), "session_not_found")
    await _rejected(core, core.open_episode("se_nope"), "session_not_found")
    await _rejected(core, core.close_episode("ep_nope"), "episode_not_found")
    await _rejected(core, core.timeline("ep_nope", NS), "episode_not_found")
    await _rejected(
        core,
        core.turn_end(
            TurnResult(
                agent="hermes", session_id="s", episode_id="ep_nope", agent_text="a", ts=now()
            )
        ),
        "episode_not_found",
    )
    assert await core.get_trace("tr_nope", NS) is None
    assert await core.get_episode("ep_nope", NS) is None


async def test_reused_turn_key_with_different_text(core: LocalCore) -> None:
    t = now()
    await core.turn_start(
        TurnInput(agent="hermes", session_id="s", user_text="original", ts=t, turn_key="k")
    )
    await _rejected(
        core,
        core.turn_start(
            TurnInput(agent="hermes", session_id="s", user_text="changed", ts=t, turn_key="k")
        ),
        "conflict",
    )


@pytest.mark.parametrize("top_k", [TopK(tier2=-1), TopK(tier1=10**6), TopK(tier3=-5)])
async def test_negative_or_huge_top_k(core: LocalCore, top_k: TopK) -> None:
    await _rejected(
        core, core.search(RetrievalQuery(agent="hermes", query="seed", top_k=top_k, namespace=NS))
    )


async def test_deadline_already_past_is_an_empty_cut_off_and_writes_nothing(
    core: LocalCore,
) -> None:
    before = await _snapshot(core)
    res = await core.turn_start(
        TurnInput(
            agent="hermes", session_id="s", user_text="seed fact?", ts=now(), deadline_at=now() - 1
        )
    )
    assert res.cut_off and res.hits == () and res.injected_context == ""
    res2 = await core.search(
        RetrievalQuery(agent="hermes", query="seed", namespace=NS, deadline_at=now() - 1)
    )
    assert res2.cut_off and res2.hits == ()
    assert await _snapshot(core) == before


async def test_turn_end_with_no_content(core: LocalCore) -> None:
    await _rejected(
        core, core.turn_end(TurnResult(agent="hermes", session_id="s", agent_text="  ", ts=now()))
    )


async def test_negative_timestamp(core: LocalCore) -> None:
    await _rejected(
        core, core.turn_start(TurnInput(agent="hermes", session_id="s", user_text="q", ts=-5))
    )


def _with(**kw: Any) -> TurnResult:
    base: dict[str, Any] = dict(
        agent="hermes", session_id="s", agent_text="a", user_text="u", ts=now(), namespace=NS
    )
    return TurnResult(**{**base, **kw})


@pytest.mark.parametrize(
    "bad_turn",
    [
        {"ts": 2**70},  # SQLite refused it with an untyped OverflowError
        {"ts": 2**63},
        # acknowledged, then a poison entry: LanceDB could not store it, and gRPC ListTraces of
        # the namespace failed with "cannot encode Trace" while it was retried
        {"tool_calls": (ToolCall(name="t", started_at=2**70),)},
        {"tool_calls": (ToolCall(name="t", ended_at=-1),)},
        {"tool_calls": (ToolCall(name="t", input={"x": float("nan")}),)},
        {"tool_calls": (ToolCall(name="t", output={"x": {1, 2}}),)},
        {"tool_calls": (ToolCall(name="t", error_code=7),)},  # type: ignore[arg-type]
        {"context_hints": {"x": float("inf")}},
    ],
    ids=lambda kw: next(iter(kw)),
)
async def test_turn_end_refuses_what_the_wire_cannot_carry(
    core: LocalCore, bad_turn: dict[str, Any]
) -> None:
    """Everything ``turn_end`` acknowledges can be stored and answered over gRPC: a value that
    cannot be is refused at acknowledgement, and the namespace's listing keeps working."""
    err = await _rejected(core, core.turn_end(_with(**bad_turn)))
    assert err.details["field"].split(".")[0].split("[")[0] in bad_turn
    await core.turn_end(_with(user_text="a good turn after the bad one"))
    async with RemoteCore(f"unix:{socket_path_for(core.home)}") as remote:
        listed = await remote.list_traces(ListQuery(namespace=NS))
    assert "a good turn after the bad one" in {t.user_text for t in listed}


async def test_a_ts_past_the_calendar_is_refused(core: LocalCore) -> None:
    """``ts=2**62`` fits int64 but no calendar: opening its episode failed with an untyped
    ``sqlite3.IntegrityError`` (the namespace figures' ``date()`` is NULL for it)."""
    err = await _rejected(core, core.turn_end(_with(session_id="fresh", ts=2**62)))
    assert err.details["field"] == "ts"
    await _rejected(
        core, core.turn_start(TurnInput(agent="hermes", session_id="s", user_text="q", ts=2**62))
    )


async def test_corrupt_config_yaml_refuses_to_open_and_keeps_the_file(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("retrieval: [broken\n")
    with pytest.raises(StratamemError) as err:
        async with open_core(tmp_path, embedding__provider="none"):
            pass
    assert err.value.code == "config_invalid"
    assert (tmp_path / "config.yaml").read_text() == "retrieval: [broken\n"
    assert not (tmp_path / "data" / "stratamem.db").exists()
    # the lock is not left behind
    (tmp_path / "config.yaml").write_text("")
    async with open_core(tmp_path, embedding__provider="none"):
        pass


async def test_unwritable_home_is_path_not_writable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StratamemError) as err:
        async with open_core(blocker / "home", embedding__provider="none"):
            pass
    assert err.value.code == "path_not_writable"
