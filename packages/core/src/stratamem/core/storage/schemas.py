"""Arrow schemas of the LanceDB tables: everything searched by vector or text lives here.

The ``id`` column is the unenforced primary key (non-nullable) so concurrent ``merge_insert``
upserts never duplicate rows (reference/stack.md §2.4). Vectors are L2-normalised float32; the
dimension comes from the embedder and is recorded in the table's schema metadata.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

PK_METADATA = {b"lance-schema:unenforced-primary-key": b"true"}
DIM_METADATA_KEY = b"stratamem:embedding_dim"
MODEL_METADATA_KEY = b"stratamem:embedding_model"


def _id() -> pa.Field:
    return pa.field("id", pa.string(), nullable=False, metadata=PK_METADATA)


def _owner() -> list[pa.Field]:
    return [
        pa.field("owner_agent_kind", pa.string(), nullable=False),
        pa.field("owner_profile_id", pa.string(), nullable=False),
        pa.field("owner_workspace_id", pa.string()),
        pa.field("share_scope", pa.string(), nullable=False),
        pa.field("share_target", pa.string()),
        pa.field("shared_at", pa.int64()),
    ]


def _vec(name: str, dim: int) -> pa.Field:
    return pa.field(name, pa.list_(pa.float32(), dim))


def _learned_tail(dim: int) -> list[pa.Field]:
    """Columns every learned layer (policies, world models, skills) ends with."""
    return [
        pa.field("created_at", pa.int64()),
        pa.field("updated_at", pa.int64()),
        pa.field("edited_at", pa.int64()),
        pa.field("search_text", pa.string()),
        *_owner(),
        _vec("vec", dim),
    ]


def _schema(fields: list[pa.Field], dim: int, model: str) -> pa.Schema:
    return pa.schema(
        fields,
        metadata={DIM_METADATA_KEY: str(dim).encode(), MODEL_METADATA_KEY: model.encode()},
    )


def traces_schema(dim: int, model: str = "") -> pa.Schema:
    """L1 traces. ``search_text`` is the FTS column: user + assistant text + summary + tags + tools."""
    return _schema(
        [
            _id(),
            pa.field("episode_id", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("ts", pa.int64(), nullable=False),
            pa.field("turn_id", pa.int64(), nullable=False),
            pa.field("user_text", pa.string()),
            pa.field("agent_text", pa.string()),
            pa.field("summary", pa.string()),
            pa.field("reflection", pa.string()),
            pa.field("agent_thinking", pa.string()),
            pa.field("tool_calls_json", pa.string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("error_signatures", pa.list_(pa.string())),
            pa.field("value", pa.float32()),
            pa.field("alpha", pa.float32()),
            pa.field("r_human", pa.float32()),
            pa.field("priority", pa.float32()),
            pa.field("search_text", pa.string()),
            *_owner(),
            pa.field("journal_seq", pa.int64()),
            _vec("vec_summary", dim),
            _vec("vec_action", dim),
        ],
        dim,
        model,
    )


def policies_schema(dim: int, model: str = "") -> pa.Schema:
    """L2 policies; decision guidance and sources as JSON text."""
    return _schema(
        [
            _id(),
            pa.field("title", pa.string()),
            pa.field("trigger", pa.string()),
            pa.field("procedure", pa.string()),
            pa.field("verification", pa.string()),
            pa.field("boundary", pa.string()),
            pa.field("support", pa.int64()),
            pa.field("gain", pa.float32()),
            pa.field("status", pa.string()),
            pa.field("experience_type", pa.string()),
            pa.field("evidence_polarity", pa.string()),
            pa.field("salience", pa.float32()),
            pa.field("confidence", pa.float32()),
            pa.field("skill_eligible", pa.bool_()),
            pa.field("guidance_json", pa.string()),
            pa.field("source_episode_ids", pa.list_(pa.string())),
            pa.field("source_feedback_ids", pa.list_(pa.string())),
            pa.field("source_trace_ids", pa.list_(pa.string())),
            *_learned_tail(dim),
        ],
        dim,
        model,
    )


def world_models_schema(dim: int, model: str = "") -> pa.Schema:
    """L3 world models; structure as JSON text."""
    return _schema(
        [
            _id(),
            pa.field("title", pa.string()),
            pa.field("body", pa.string()),
            pa.field("structure_json", pa.string()),
            pa.field("policy_ids", pa.list_(pa.string())),
            pa.field("domain_tags", pa.list_(pa.string())),
            pa.field("confidence", pa.float32()),
            pa.field("version", pa.int64()),
            pa.field("status", pa.string()),
            *_learned_tail(dim),
        ],
        dim,
        model,
    )


def skills_schema(dim: int, model: str = "") -> pa.Schema:
    """Skills with their η lifecycle."""
    return _schema(
        [
            _id(),
            pa.field("name", pa.string()),
            pa.field("status", pa.string()),
            pa.field("invocation_guide", pa.string()),
            pa.field("guidance_json", pa.string()),
            pa.field("evidence_anchors", pa.list_(pa.string())),
            pa.field("eta", pa.float32()),
            pa.field("support", pa.int64()),
            pa.field("gain", pa.float32()),
            pa.field("trials_attempted", pa.int64()),
            pa.field("trials_passed", pa.int64()),
            pa.field("source_policy_ids", pa.list_(pa.string())),
            pa.field("source_world_model_ids", pa.list_(pa.string())),
            pa.field("version", pa.int64()),
            pa.field("usage_count", pa.int64()),
            pa.field("last_used_at", pa.int64()),
            *_learned_tail(dim),
        ],
        dim,
        model,
    )


#: table name -> (schema factory, vector columns)
TABLES = {
    "traces": (traces_schema, ("vec_summary", "vec_action")),
    "policies": (policies_schema, ("vec",)),
    "world_models": (world_models_schema, ("vec",)),
    "skills": (skills_schema, ("vec",)),
}


def conform(row: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    """``row`` in ``schema``'s columns: missing ones None, vectors as plain float lists."""
    out: dict[str, Any] = {}
    for field in schema:
        value = row.get(field.name)
        if isinstance(value, np.ndarray):
            value = value.astype(np.float32).tolist()
        out[field.name] = value
    return out
