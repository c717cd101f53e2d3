"""The learned layers' records: policies (L2), world models (L3) and skills — get, list, status
changes and owner-only deletes. The learner writes them; these are the callers' views."""

from __future__ import annotations

from typing import Any

from stratamem.contract.dtos import ListQuery, Namespace, Policy, Skill, SkillGetOptions, WorldModel
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.engine.services import EngineServices
from stratamem.core.engine.traces import read_scope
from stratamem.core.ids import now_ms
from stratamem.core.storage.ownership import Scope, quote
from stratamem.core.storage.rows import policy_from_row, skill_from_row, world_model_from_row
from stratamem.core.telemetry.audit import audit
from stratamem.core.validation import (
    MAX_FILTER_CHARS,
    bad,
    check_cursor,
    check_id,
    check_limit,
    check_text,
)


async def get_one(
    svc: EngineServices, table: str, row_id: str, scope: Scope
) -> dict[str, Any] | None:
    rows = await svc.store.get_rows(table, [row_id], scope)
    return rows[0] if rows else None


#: newest first by creation; the id breaks ties so the order (and a keyset cursor) is total.
#: Not ``updated_at``: the learner changes these rows all the time (gain, status, merged sources,
#: η), and a row changed while a client walked the pages moved ahead of its cursor (or its offset)
#: and was never listed. Every writer sets ``created_at``; a row without one (nulls sort last)
#: reads as 0, as its DTO and cursor say.
_ORDER = (("created_at", False), ("id", False))


def _cursor(after: str) -> tuple[int, str]:
    return check_cursor(
        after,
        "the `created_at:id` cursor of a listed policy, world model or skill "
        "(contract.dtos.learned_cursor)",
    )


async def list_rows(
    svc: EngineServices, table: str, query: ListQuery, ns: Namespace
) -> list[dict[str, Any]]:
    """One page, newest first. Filter, ownership rule, order, cursor, offset and limit all run
    inside LanceDB (a top-k over the matching rows): a page reads ``limit`` rows, never the table.
    ``after`` (keyset on ``(created_at, id)``) pages stably while rows are added and changed;
    ``offset`` (after the cursor, if any) is kept for shallow paging."""
    check_limit(query.limit, query.offset)
    where = []
    if query.status:
        check_text("status", query.status, 64)
        where.append(f"status = {quote(query.status)}")
    if query.q:
        check_text("q", query.q, MAX_FILTER_CHARS)
        where.append(f"lower(search_text) LIKE {quote('%' + query.q.lower() + '%')}")
    if query.after:
        key, row_id = _cursor(query.after)
        made = "coalesce(created_at, 0)"
        where.append(f"({made} < {key} OR ({made} = {key} AND id < {quote(row_id)}))")
    return await svc.store.scan(
        table,
        read_scope(ns, query.include_all_namespaces),
        " AND ".join(where) or None,
        query.limit,
        columns=svc.store.plain_columns(table),
        offset=query.offset,
        order_by=_ORDER,
    )


async def delete_owned(svc: EngineServices, table: str, row_id: str, ns: Namespace) -> bool:
    check_id("id", row_id)
    rows = await svc.store.get_rows(table, [row_id], Scope.owned(ns))
    if not rows:
        return False
    await svc.store.delete(table, [row_id])
    audit(f"{table}.deleted", namespace=ns, target=row_id)
    return True


# -- policies --------------------------------------------------------------------------------
async def get_policy(svc: EngineServices, policy_id: str, ns: Namespace) -> Policy | None:
    check_id("policy_id", policy_id)
    row = await get_one(svc, "policies", policy_id, Scope.visible(ns))
    return policy_from_row(row) if row else None


async def list_policies(svc: EngineServices, query: ListQuery, ns: Namespace) -> list[Policy]:
    return [policy_from_row(r) for r in await list_rows(svc, "policies", query, ns)]


async def set_policy_status(
    svc: EngineServices, policy_id: str, status: str, ns: Namespace
) -> Policy | None:
    check_id("policy_id", policy_id)
    if status not in ("candidate", "active", "archived"):
        raise bad("status must be candidate, active or archived", field="status")
    if await get_one(svc, "policies", policy_id, Scope.visible(ns)) is None:
        return None
    if await get_one(svc, "policies", policy_id, Scope.owned(ns)) is None:
        raise StratamemError(
            ErrorCode.PERMISSION_DENIED,
            f"policy {policy_id!r} belongs to another namespace (shared policies are read-only)",
            {"policy_id": policy_id},
        )
    await svc.store.update("policies", policy_id, {"status": status, "updated_at": now_ms()})
    audit("policy.status_changed", namespace=ns, target=policy_id, status=status)
    return await get_policy(svc, policy_id, ns)


# -- world models ----------------------------------------------------------------------------
async def get_world_model(
    svc: EngineServices, world_model_id: str, ns: Namespace
) -> WorldModel | None:
    check_id("world_model_id", world_model_id)
    row = await get_one(svc, "world_models", world_model_id, Scope.visible(ns))
    return world_model_from_row(row) if row else None


async def list_world_models(
    svc: EngineServices, query: ListQuery, ns: Namespace
) -> list[WorldModel]:
    return [world_model_from_row(r) for r in await list_rows(svc, "world_models", query, ns)]


# -- skills ----------------------------------------------------------------------------------
async def get_skill(
    svc: EngineServices, skill_id: str, options: SkillGetOptions | None, ns: Namespace
) -> Skill | None:
    """By id, else by a unique name; ``options`` may record a use or a trial of it."""
    check_id("skill_id", skill_id)
    row = await get_one(svc, "skills", skill_id, Scope.visible(ns))
    if row is None:
        by_name = await svc.store.scan("skills", Scope.visible(ns), f"name = {quote(skill_id)}", 2)
        row = by_name[0] if len(by_name) == 1 else None
    if row is None:
        return None
    if options is not None and options.record_use:
        await svc.store.update(
            "skills",
            row["id"],
            {"usage_count": int(row.get("usage_count") or 0) + 1, "last_used_at": now_ms()},
        )
        row = await get_one(svc, "skills", row["id"], Scope.visible(ns)) or row
    if options is not None and options.record_trial and svc.learner is not None:
        await svc.learner.skill_trial(
            row["id"], options.session_id, options.episode_id, options.trace_id
        )
    return skill_from_row(row)


async def list_skills(svc: EngineServices, query: ListQuery, ns: Namespace) -> list[Skill]:
    return [skill_from_row(r) for r in await list_rows(svc, "skills", query, ns)]


async def archive_skill(svc: EngineServices, skill_id: str, reason: str, ns: Namespace) -> Skill:
    check_id("skill_id", skill_id)
    rows = await svc.store.get_rows("skills", [skill_id], Scope.owned(ns))
    if not rows:
        raise StratamemError(
            ErrorCode.SKILL_NOT_FOUND, f"skill {skill_id!r} not found", {"skill_id": skill_id}
        )
    if reason not in ("eta-floor", "manual", "policy-rebuilt"):
        reason = "manual"
    await svc.store.update("skills", skill_id, {"status": "archived", "updated_at": now_ms()})
    await svc.run_db(
        lambda: svc.db.audit("core", "skill.archived", skill_id, {"reason": reason}, ns)
    )
    audit("skill.archived", namespace=ns, target=skill_id, reason=reason)
    skill = await get_skill(svc, skill_id, None, ns)
    assert skill is not None
    return skill
