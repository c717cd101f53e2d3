"""engine.commit: turn end -> trace rows -> one journal transaction (the durable ack)."""

from __future__ import annotations

import json

import pytest

from stratamem.contract.dtos import SubagentOutcome, ToolCall, ToolOutcome, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import commit, sessions
from stratamem.core.engine.services import EngineServices

from .conftest import ALICE, BOB, now


def _result(**kw: object) -> TurnResult:
    base: dict[str, object] = {
        "agent": "hermes",
        "session_id": "s",
        "agent_text": "done",
        "ts": now(),
    }
    return TurnResult(**{**base, **kw})  # type: ignore[arg-type]


async def test_a_turn_end_is_in_the_journal_before_the_ack(svc: EngineServices) -> None:
    ack = await commit.turn_end(svc, _result(user_text="rotate the logs", turn_key="k"), ALICE)
    rows = await svc.run_db(
        lambda: svc.db.query("SELECT * FROM journal WHERE seq=?", (ack.journal_seq,))
    )
    assert rows and rows[0]["target_id"] == ack.trace_id and rows[0]["turn_key"] == "k"
    payload = json.loads(rows[0]["payload_json"])
    assert payload["owner_profile_id"] == "alice" and "_embed" in payload
    ep = await sessions.episode_row(svc, ack.episode_id)
    assert ep is not None and json.loads(ep["trace_ids_json"]) == [ack.trace_id]
    roles = [t["role"] for t in await sessions.episode_turns(svc, ack.episode_id)]
    assert roles == ["user", "assistant"]


async def test_a_replayed_turn_key_returns_the_first_ack(svc: EngineServices) -> None:
    a = await commit.turn_end(svc, _result(user_text="q", turn_key="k"), ALICE)
    b = await commit.turn_end(svc, _result(user_text="q", turn_key="k"), ALICE)
    assert (a.trace_id, a.journal_seq) == (b.trace_id, b.journal_seq)


async def test_no_episode_and_no_user_text_is_a_typed_error(svc: EngineServices) -> None:
    with pytest.raises(StratamemError) as err:
        await commit.turn_end(svc, _result(), ALICE)
    assert err.value.code == "episode_not_found"
    with pytest.raises(StratamemError) as err:
        await commit.turn_end(svc, _result(agent_text="", user_text=""), ALICE)
    assert err.value.code == "invalid_argument"


async def test_tool_calls_are_recorded_as_tool_turns(svc: EngineServices) -> None:
    call = ToolCall(name="grep", input={"q": "x"}, output={"hits": 2})
    ack = await commit.turn_end(svc, _result(user_text="find x", tool_calls=(call,)), ALICE)
    got = await sessions.episode_turns(svc, ack.episode_id)
    assert [t["role"] for t in got] == ["user", "tool", "assistant"]
    assert json.loads(got[1]["content"]) == {"hits": 2}


async def test_capture_rows_say_what_to_embed(svc: EngineServices) -> None:
    rows = commit.capture_rows(svc, "q?", now(), _result(agent_text="an answer"), ALICE, "ep1")
    assert rows and all("vec_summary" in r["_embed"] for r in rows)


async def test_a_subagent_outcome_is_a_turn_with_a_subagent_call(svc: EngineServices) -> None:
    turn = commit.subagent_turn(
        svc, SubagentOutcome(agent="hermes", session_id="s", task="summarise", result="ok")
    )
    assert turn.tool_calls[-1].name == "subagent" and turn.user_text == "Subagent task: summarise"
    ack = await commit.turn_end(svc, turn, ALICE)
    assert ack.trace_id
    commit.record_tool_outcome(svc, ToolOutcome(session_id="s", tool="grep", success=True))


async def test_a_keyed_subagent_outcome_sent_again_is_stored_once(svc: EngineServices) -> None:
    def outcome(result: str) -> SubagentOutcome:
        return SubagentOutcome(
            agent="hermes", session_id="s", task="summarise", result=result, turn_key="sub-1"
        )

    first = await commit.turn_end(svc, commit.subagent_turn(svc, outcome("3 pages")), ALICE)
    again = await commit.turn_end(svc, commit.subagent_turn(svc, outcome("3 pages")), ALICE)
    assert again == first
    with pytest.raises(StratamemError) as err:  # the key with other content: a typed conflict
        await commit.turn_end(svc, commit.subagent_turn(svc, outcome("4 pages")), ALICE)
    assert err.value.code == "conflict"
    keyed = svc.db.call(
        lambda c: c.execute("SELECT COUNT(*) FROM journal WHERE turn_key='sub-1'").fetchone()[0]
    )
    assert keyed == 1


def _count_commits(svc: EngineServices) -> list[str]:
    """The SQL statements the core's real connection runs (sqlite3's own trace hook)."""
    seen: list[str] = []
    svc.db._conn.set_trace_callback(seen.append)
    return seen


_ONE_TXN = ("sessions", "episodes", "episode_turns", "journal")


async def test_a_first_turn_end_is_one_durable_commit(svc: EngineServices) -> None:
    # session, episode, turns and journal entry in one transaction: one fsync'd commit per ack
    seen = _count_commits(svc)
    ack = await commit.turn_end(svc, _result(session_id="fresh", user_text="q"), ALICE)
    svc.db._conn.set_trace_callback(None)
    # the journal writer shares the connection and may already have applied the entry (its own
    # later COMMIT): the ack's transaction is the one that holds the journal insert
    journal = next(i for i, s in enumerate(seen) if s.startswith("INSERT INTO journal"))
    begin = max(i for i in range(journal) if seen[i].startswith("BEGIN"))
    end = next(i for i in range(journal, len(seen)) if seen[i] == "COMMIT")
    assert "COMMIT" not in seen[:begin]  # nothing of this turn was committed before it
    txn = seen[begin:end]
    assert all(any(s.startswith(f"INSERT INTO {t}") for s in txn) for t in _ONE_TXN)
    ep = await sessions.episode_row(svc, ack.episode_id)
    assert ep is not None and ep["session_id"] == "fresh" and ep["status"] == "open"
    srow = await sessions.session_row(svc, "fresh")
    assert srow is not None and srow["owner_profile_id"] == "alice"


async def test_a_refused_turn_end_leaves_no_session_behind(svc: EngineServices) -> None:
    # no open episode and no user text: a typed error, and nothing was written (not even the session)
    with pytest.raises(StratamemError) as err:
        await commit.turn_end(svc, _result(session_id="nobody"), ALICE)
    assert err.value.code == "episode_not_found"
    assert await sessions.session_row(svc, "nobody") is None


async def test_turn_end_checks_the_owner_in_its_own_transaction(svc: EngineServices) -> None:
    await commit.turn_end(svc, _result(session_id="mine", user_text="q"), ALICE)
    with pytest.raises(StratamemError) as err:
        await commit.turn_end(svc, _result(session_id="mine", user_text="q2"), BOB)
    assert err.value.code == "permission_denied"
    # no namespace named: the session owner's
    ack = await commit.turn_end(svc, _result(session_id="mine", agent_text="more"), None)
    rows = await svc.run_db(
        lambda: svc.db.query("SELECT payload_json FROM journal WHERE seq=?", (ack.journal_seq,))
    )
    assert json.loads(rows[0]["payload_json"])["owner_profile_id"] == "alice"


async def test_a_delayed_end_reopens_its_closed_episode(svc: EngineServices) -> None:
    first = await commit.turn_end(svc, _result(session_id="late", user_text="q"), ALICE)
    await sessions.close_episode_row(svc, first.episode_id, "late", "finalized")
    ack = await commit.turn_end(
        svc, _result(session_id="late", episode_id=first.episode_id, agent_text="late"), ALICE
    )
    ep = await sessions.episode_row(svc, ack.episode_id)
    assert ack.episode_id == first.episode_id and ep is not None and ep["status"] == "open"
    assert json.loads(ep["meta_json"])["delayed_agent_end_recovered"] is True
    assert len(json.loads(ep["trace_ids_json"])) == 2


async def test_pending_user_turns_become_the_turns_user_text(svc: EngineServices) -> None:
    # user turns recorded by turn_start since the last assistant turn are this turn's user text
    a = await commit.turn_end(svc, _result(session_id="u", user_text="first"), ALICE)

    def add(c: object) -> None:
        for text in ("second", "third"):
            c.execute(  # type: ignore[attr-defined]
                "INSERT INTO episode_turns(episode_id, role, content, ts) VALUES (?,?,?,?)",
                (a.episode_id, "user", text, now()),
            )

    await svc.run_db(lambda: svc.db.call(add))
    ack = await commit.turn_end(svc, _result(session_id="u", agent_text="answer"), ALICE)
    rows = await svc.run_db(
        lambda: svc.db.query("SELECT payload_json FROM journal WHERE seq=?", (ack.journal_seq,))
    )
    assert json.loads(rows[0]["payload_json"])["user_text"] == "second\n---\nthird"
