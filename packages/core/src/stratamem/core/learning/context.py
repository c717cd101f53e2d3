"""What every learning stage needs from the core: config, SQL, the stores, the embedder, the LLM, events.

One object so the stages stay small and testable; it never owns anything: it reads through the
engine's public services (``stratamem.core.engine.services.EngineServices``).
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from stratamem.contract.dtos import Namespace
from stratamem.core.config.settings import lookup
from stratamem.core.engine.sessions import patch_episode_meta
from stratamem.core.learning import prompts
from stratamem.core.llm import background_llm, complete_json
from stratamem.core.llm.roles import role_llms
from stratamem.core.storage.ownership import Scope, ids_where, owner_namespace
from stratamem.core.telemetry import get_logger, span

if TYPE_CHECKING:
    from stratamem.core.engine.services import EngineServices

T = TypeVar("T")
log = get_logger("learning")


class LearningContext:
    def __init__(self, core: EngineServices) -> None:
        self.core = core
        self.config: Mapping[str, Any] = core.config
        slots = int(self.config["session"]["bg_llm_concurrency"])
        self.llm = background_llm(core.llm, slots)
        #: tasks with their own LLM role (l3_llm, skill_evolver); blank roles share the main LLM
        self.role_llms = {
            task: self.llm if llm is core.llm else background_llm(llm, slots)
            for task, llm in role_llms(self.config, core.llm).items()
        }
        self.llm_calls = 0

    # -- config / events ---------------------------------------------------------------------
    def cfg(self, section: str, key: str) -> Any:
        return lookup(self.config, section, key)

    def emit(
        self,
        type_: str,
        payload: dict[str, Any],
        owner: Scope | Namespace | Mapping[str, Any] | None = None,
    ) -> None:
        """An event of ``owner``'s namespace (a row, a scope or a namespace; None: system-wide)."""
        if isinstance(owner, Scope):
            ns = owner.namespace
        elif isinstance(owner, Namespace) or owner is None:
            ns = owner
        else:
            ns = owner_namespace(owner)
        self.core.bus.emit(type_, payload, namespace=ns)

    # -- SQLite ------------------------------------------------------------------------------
    async def sql(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        db = self.core.db
        out: T = await self.core.run_db(functools.partial(db.call, fn))
        return out

    async def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        db = self.core.db
        rows: list[sqlite3.Row] = await self.core.run_db(functools.partial(db.query, sql, params))
        return rows

    async def patch_episode_meta(self, episode_id: str, patch: dict[str, Any]) -> None:
        await patch_episode_meta(self.core, episode_id, patch)

    async def kv_get(self, key: str) -> Any:
        return await self.core.run_db(functools.partial(self.core.db.kv_get, key))

    async def kv_set(self, key: str, value: Any) -> None:
        await self.core.run_db(functools.partial(self.core.db.kv_set, key, value))

    # -- LanceDB -----------------------------------------------------------------------------
    async def applied(self) -> None:
        """Wait until every acknowledged turn is in LanceDB (learning reads stored rows only)."""
        await self.core.journal.drain(30.0)

    # Every read states whose rows it may see (``storage.ownership.Scope``): learning reads one
    # owner's rows at a time and never mixes two owners' rows into one prompt or layer.
    async def rows(self, table: str, ids: Sequence[str], scope: Scope) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i in range(0, len(ids), 200):
            out += await self.core.store.get_rows(table, list(ids[i : i + 200]), scope)
        return out

    async def scan(
        self, table: str, scope: Scope, where: str | None = None, limit: int = 10_000
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = await self.core.store.scan(table, scope, where, limit)
        return rows

    async def nearest(
        self,
        table: str,
        column: str,
        vec: Sequence[float],
        scope: Scope,
        where: str | None,
        limit: int,
    ) -> list[tuple[dict[str, Any], float]]:
        """(row, cosine) nearest first."""
        got = await self.core.store.vector_search(
            table, column, np.asarray(vec, dtype=np.float32), scope, limit, where=where
        )
        return [(r, 1.0 - float(r.get("_distance") or 0.0)) for r in got]

    async def update(self, table: str, row_id: str, values: dict[str, Any]) -> None:
        async with self.core.journal.write_lock:
            await self.core.store.update(table, row_id, values)

    async def upsert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        async with self.core.journal.write_lock:
            await self.core.store.upsert(table, list(rows))

    async def episode_owner(self, episode_id: str) -> Scope | None:
        """Rows owned by the episode's owner (None when the episode does not exist)."""
        ep = await self.query(
            "SELECT owner_agent_kind, owner_profile_id, owner_workspace_id FROM episodes WHERE id=?",
            (episode_id,),
        )
        return Scope.owned(owner_namespace(dict(ep[0]))) if ep else None

    async def session_owner(self, session_id: str) -> Scope | None:
        """Rows owned by the session's owner (None when the session does not exist)."""
        s = await self.query(
            "SELECT owner_agent_kind, owner_profile_id, owner_workspace_id FROM sessions WHERE id=?",
            (session_id,),
        )
        return Scope.owned(owner_namespace(dict(s[0]))) if s else None

    async def episode_traces(self, episode_id: str) -> list[dict[str, Any]]:
        """The episode's stored trace rows (its owner's only) in chronological order."""
        ep = await self.query(
            "SELECT trace_ids_json, owner_agent_kind, owner_profile_id, owner_workspace_id"
            " FROM episodes WHERE id=?",
            (episode_id,),
        )
        if not ep:
            return []
        ids = json.loads(ep[0]["trace_ids_json"] or "[]")
        rows = await self.rows("traces", ids, Scope.owned(owner_namespace(dict(ep[0]))))
        order = {t: i for i, t in enumerate(ids)}
        rows.sort(key=lambda r: (int(r.get("ts") or 0), order.get(r["id"], 0)))
        return rows

    @staticmethod
    def ids_where(ids: Sequence[str]) -> str:
        return ids_where(ids)

    # -- embedding / LLM ---------------------------------------------------------------------
    async def embed(self, text: str) -> list[float] | None:
        if self.core.embedder is None or not text.strip():
            return None
        try:
            vecs = await self.core.run_cpu(functools.partial(self.core.embed_documents, [text]))
        except Exception as exc:
            log.warning("learning.embed_failed", error=str(exc))
            return None
        return [float(x) for x in vecs[0]]

    @property
    def has_llm(self) -> bool:
        return self.llm is not None

    def llm_for(self, task: str) -> Any:
        """The provider that answers ``task`` (its role's, else the main LLM), or None."""
        return self.role_llms.get(task, self.llm)

    def has_llm_for(self, task: str) -> bool:
        return self.llm_for(task) is not None

    async def ask(
        self, task: str, payload: Mapping[str, Any], validate: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any] | None:
        """One JSON answer of ``task`` or ``None`` (no LLM, provider failure, malformed answers)."""
        llm = self.llm_for(task)
        if llm is None:
            return None
        self.llm_calls += 1
        with span("learning.llm", task=task):
            out = await complete_json(
                llm,
                prompts.build(task, payload),
                retries=int(self.cfg("learning", "json_retries")),
                validate=validate,
                timeout_s=float(self.cfg("learning", "llm_timeout_ms")) / 1000,
            )
        if out is None:
            log.info("learning.llm_fallback", task=task)
        return out


def vec_of(row: Mapping[str, Any], *cols: str) -> list[float] | None:
    for c in cols or ("vec_summary", "vec_action"):
        v = row.get(c)
        if v is not None and len(v):
            return [float(x) for x in v]
    return None


def cosine(a: Sequence[float] | None, b: Sequence[float] | None) -> float:
    if a is None or b is None or len(a) != len(b) or not len(a):
        return 0.0
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    if na == 0 or nb == 0:
        return 0.0
    return float(va @ vb / (na * nb))


def centroid(vecs: Sequence[Sequence[float]]) -> list[float] | None:
    if not vecs:
        return None
    m = np.mean(np.asarray(vecs, dtype=np.float64), axis=0)
    n = float(np.linalg.norm(m))
    return [float(x) for x in (m / n if n else m)]
