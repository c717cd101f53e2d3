"""Admin actions reach ``<home>/logs/audit.log``: config changes (keys, never values), refused
tokens and namespaces (gRPC and viewer), deletes, skill archives, policy status changes and journal
retries and discards."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_support import tcp_service
from viewer_support import call, running_viewer

from stratamem.contract.dtos import ListQuery, Namespace, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.contract.remote import RemoteCore
from stratamem.core.config.loader import patch_config_file
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.telemetry.logs import configure_logging, reset_logging

HERMES = Namespace(agent_kind="hermes")
OPENCLAW = Namespace(agent_kind="openclaw")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "embedding:\n  provider: none\nserver:\n  tokens:\n    scoped-token: ['hermes/*']\n",
        encoding="utf-8",
    )
    configure_logging(home, {"logging": {"level": "info"}})
    try:
        yield home
    finally:
        reset_logging()


def _audit(home: Path) -> list[dict[str, Any]]:
    path = home / "logs" / "audit.log"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_a_config_change_is_audited_with_its_keys_not_its_values(home: Path) -> None:
    patch_config_file(home, {"llm.api_key": "sk-very-secret", "retrieval.tier2_top_k": 7})
    lines = [a for a in _audit(home) if a["event"] == "config.changed"]
    assert lines and lines[-1]["keys"] == ["llm.api_key", "retrieval.tier2_top_k"]
    assert "sk-very-secret" not in (home / "logs" / "audit.log").read_text(encoding="utf-8")


async def test_refused_tokens_and_namespaces_are_audited(home: Path) -> None:
    async with tcp_service(home) as svc:
        assert svc.tcp_address is not None
        async with RemoteCore(svc.tcp_address, token="wrong", reconnect_s=0) as bad:
            with pytest.raises(StratamemError):
                await bad.health()
        async with RemoteCore(svc.tcp_address, token="scoped-token") as scoped:
            with pytest.raises(StratamemError):
                await scoped.list_traces(ListQuery(namespace=OPENCLAW))
    events = {a["event"]: a for a in _audit(home)}
    assert "token.refused" in events and events["token.refused"]["method"].endswith("/Health")
    assert events["namespace.refused"]["namespace"] == "openclaw/default"
    assert events["namespace.refused"]["allowed"] == ["hermes/*"]


async def test_deletes_and_skill_archives_are_audited(home: Path) -> None:
    core = await open_local_core(home)
    try:
        ack = await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s",
                agent_text="ok",
                user_text="hello",
                ts=int(time.time() * 1000),
                namespace=HERMES,
            )
        )
        assert await core.delete_traces([ack.trace_id], HERMES) == 1
    finally:
        await core.shutdown()
    deleted = [a for a in _audit(home) if a["event"] == "traces.deleted"]
    assert deleted and deleted[-1]["target"] == [ack.trace_id]
    assert deleted[-1]["namespace"] == "hermes/default"


async def test_policy_status_changes_and_journal_retries_and_discards_are_audited(
    home: Path,
) -> None:
    from test_journal_dead_letter import _poison  # a journal entry LanceDB cannot take

    core = await open_local_core(home)
    await core.shutdown()
    _poison(home)
    core = await open_local_core(home, journal__max_attempts=2, journal__retry_backoff_ms=10)
    try:
        own = {
            "owner_agent_kind": "hermes",
            "owner_profile_id": "default",
            "share_scope": "private",
        }
        await core.store.upsert("policies", [{"id": "po_1", "title": "t", **own}])
        assert await core.set_policy_status("po_1", "archived", HERMES) is not None

        async def set_aside() -> list[int]:
            end = time.monotonic() + 60
            while not (core.journal.set_aside_total == 1 and not core.journal.pending):
                assert time.monotonic() < end, "the poison entry was never set aside"
                await asyncio.sleep(0.05)
            return [d["seq"] for d in await core.journal.set_aside()]

        [seq] = await set_aside()
        assert await core.journal.retry_set_aside([seq]) == 1
        assert await set_aside() == [seq]  # it fails again
        assert await core.journal.discard_set_aside([seq]) == 1
    finally:
        await core.shutdown()
    events = {a["event"]: a for a in _audit(home)}
    assert events["policy.status_changed"]["target"] == "po_1"
    assert events["policy.status_changed"]["status"] == "archived"
    assert events["journal.requeued"]["target"] == [str(seq)]
    assert events["journal.discarded"]["target"] == [str(seq)]


async def test_refused_viewer_requests_are_audited(home: Path) -> None:
    tokens = {"scoped-token": ("hermes/*",)}
    async with running_viewer(home, tokens=tokens) as (_, viewer):
        base = viewer.url.rstrip("/")
        bad = await call(f"{base}/api/system", headers={"Authorization": "Bearer wrong"})
        scoped = await call(f"{base}/api/config", headers={"Authorization": "Bearer scoped-token"})
    assert (bad.status, scoped.status) == (401, 403)
    got = {(a["event"], a["path"], a["status"]) for a in _audit(home) if a["actor"] == "viewer"}
    assert ("token.refused", "/api/system", 401) in got
    assert ("viewer.refused", "/api/config", 403) in got
    assert "wrong" not in (home / "logs" / "audit.log").read_text(encoding="utf-8")
