from stratamem.openclaw.envelope import strip_envelope, strip_injected_blocks
from stratamem.openclaw.identity import namespace_for, session_id_for
from stratamem.openclaw.skips import is_explicit_one_shot, skip_reason


def test_timestamp_prefix_and_runtime_trailer_are_removed_from_history_text() -> None:
    raw = "[Mon 2026-11-30 16:40 UTC] What do you remember about me?\n\nRuntime: agent=main | session=agent:main:main | model=fake/fake-model"
    assert strip_envelope(raw) == "What do you remember about me?"


def test_sender_metadata_system_lines_and_message_ids_are_removed() -> None:
    raw = (
        'Sender (untrusted metadata):\n```json\n{"name": "Ann"}\n```\n'
        "System (untrusted): node connected\nCurrent time: 12:00\n"
        "ou_abc123: my cat is called Miso [message_id: 42]"
    )
    assert strip_envelope(raw) == "my cat is called Miso"


def test_injected_memory_block_is_never_captured_as_user_text() -> None:
    raw = "[Mon 2026-11-30 16:44 UTC] <memos_context>\n<relevant-memories>old fact</relevant-memories>\n</memos_context>\n\nSearch memory for probe"
    assert strip_envelope(raw) == "Search memory for probe"
    truncated = "<memos_context>\nhalf a block without close tag"
    assert strip_injected_blocks(truncated) == ""


def test_plain_text_passes_through_unchanged() -> None:
    assert strip_envelope("  Deploy to staging, then run the smoke tests.  ") == (
        "Deploy to staging, then run the smoke tests."
    )


def test_temp_sessions_heartbeats_bootstrap_and_subagent_news_are_skipped() -> None:
    assert skip_reason("temp:slug-generator", "make a slug") == "temp_session"
    assert skip_reason("agent:main:main", "HEARTBEAT_OK") == "sentinel"
    assert (
        skip_reason("agent:main:main", "Read HEARTBEAT.md if it exists and follow it.")
        == "sentinel"
    )
    assert skip_reason("agent:main:main", "   ") == "empty"
    assert skip_reason("agent:main:main", "[Subagent researcher] task completed: 3 links") == (
        "subagent_announcement"
    )
    assert skip_reason("agent:main:main", "My favourite colour is teal.") is None


def test_session_id_is_keyed_on_agent_and_session_key_not_on_openclaw_session_id() -> None:
    assert session_id_for("main", "agent:main:a") == "openclaw::main::agent:main:a"
    assert session_id_for(None, None) == "openclaw::main::default"
    assert is_explicit_one_shot("agent:main:explicit:42")
    assert not is_explicit_one_shot("agent:main:main")


def test_namespace_carries_agent_workspace_and_session_key() -> None:
    ns = namespace_for("coder", "/w/proj", "agent:coder:x")
    assert (ns.agent_kind, ns.profile_id, ns.workspace_path, ns.session_key) == (
        "openclaw",
        "coder",
        "/w/proj",
        "agent:coder:x",
    )
    assert ns.workspace_id == namespace_for("other", "/w/proj", None).workspace_id
    assert ns.workspace_id != namespace_for("coder", "/w/other", None).workspace_id
    assert namespace_for(None, "", None).workspace_id is None
