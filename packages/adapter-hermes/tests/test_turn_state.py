import threading

from stratamem.hermes.messages import extract_turn
from stratamem.hermes.turns import TurnLedger


def _turn(user: str, call_id: str, tool: str) -> list[dict]:
    return [
        {"role": "user", "content": user},
        {
            "role": "assistant",
            "content": "",
            "reasoning": f"thinking about {tool}",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool, "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"output of {tool}"},
        {"role": "assistant", "content": f"done with {tool}"},
    ]


def test_tool_calls_come_from_the_turn_the_user_text_opened_even_if_later_turns_follow() -> None:
    messages = _turn("first question", "c1", "read_file") + _turn(
        "second question", "c2", "terminal"
    )
    calls, thinking = extract_turn(messages, "first question")
    assert [(c.name, c.tool_call_id, c.output) for c in calls] == [
        ("read_file", "c1", "output of read_file")
    ]
    assert calls[0].input == {"path": "a.txt"}
    assert thinking == "thinking about read_file"
    calls2, _ = extract_turn(messages, "second question")
    assert [c.name for c in calls2] == ["terminal"]


def test_a_turn_that_is_not_in_the_messages_has_no_tool_calls() -> None:
    assert extract_turn(_turn("a", "c1", "x"), "never said") == ((), None)
    assert extract_turn(None, "a") == ((), None)


def test_a_lagging_sync_claims_its_own_turn_not_the_current_one() -> None:
    ledger = TurnLedger()
    t1 = ledger.start("s", 1, "hello one")
    ledger.attach_recall(t1.key, "ep-1", "ctx one", 2)
    t2 = ledger.start("s", 2, "hello two")  # turn 2 started before turn 1 was synced
    ledger.attach_recall(t2.key, "ep-2", "ctx two", 1)
    claimed = ledger.claim("s", "hello one")
    assert (claimed.key, claimed.episode_id) == ("s:1", "ep-1")
    assert ledger.current("s", "hello two").key == "s:2"
    assert ledger.claim("s", "hello two").key == "s:2"
    assert ledger.pending("s") == 0


def test_the_same_turn_number_with_the_same_text_keeps_its_key_and_recall() -> None:
    ledger = TurnLedger()
    t = ledger.start("s", 3, "again")
    ledger.attach_recall(t.key, "ep", "ctx", 1)
    assert ledger.start("s", 3, "again").episode_id == "ep"


def test_concurrent_turns_never_share_a_key() -> None:
    ledger = TurnLedger(keep=10_000)
    keys: list[str] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        for n in range(50):
            state = ledger.start(f"s{i}", n + 1, f"text {i} {n}")
            claimed = ledger.claim(f"s{i}", f"text {i} {n}")
            assert claimed.key == state.key
            with lock:
                keys.append(claimed.key)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(keys) == len(set(keys)) == 200
