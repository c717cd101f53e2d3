"""The route table: method, path pattern, handler name and the OpenAPI facts of each operation.

One table drives both dispatch and ``/api/openapi.json``, so the document cannot list a route the
server does not answer (and the tests call every documented operation on a running server).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Param:
    name: str
    where: str = "query"  # query | path
    type: str = "string"
    required: bool = False
    description: str = ""


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # OpenAPI style: /api/traces/{id}
    handler: str  # attribute of ViewerApi / WorkspaceApi ("workspace.x") / the server ("server.x")
    summary: str
    response: str  # schema name in openapi.SCHEMAS
    params: tuple[Param, ...] = ()
    body: str | None = None  # request schema name
    errors: tuple[int, ...] = (400,)
    tags: tuple[str, ...] = field(default=("api",))
    #: the home owner's only (config, logs, workspace files): a namespace-scoped token gets 403
    owner_only: bool = False

    @property
    def regex(self) -> re.Pattern[str]:
        pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.path)
        return re.compile(f"^{pattern}$")


_LIST = (
    Param("limit", type="integer", description="1-500, default 50"),
    Param("offset", type="integer", description="default 0"),
    Param("q", description="case-insensitive text filter"),
    Param(
        "namespace",
        description="AGENT/PROFILE; default every namespace of the home (a scoped token: its newest)",
    ),
)
_AFTER = Param("after", description="`next` of the previous page")
_ID = (Param("id", where="path", required=True),)
_ROOT = (Param("root", description="workspace root (default: the first of workspace.roots)"),)

ROUTES: tuple[Route, ...] = (
    Route("GET", "/api/system", "system", "version, paths, health and namespaces", "System", ()),
    Route(
        "GET",
        "/api/namespaces",
        "namespaces_view",
        "the namespaces holding memories that the caller may see, newest activity first",
        "NamespaceList",
        (
            Param("limit", type="integer", description="1-500, default 100"),
            Param("offset", type="integer", description="default 0"),
        ),
    ),
    Route(
        "GET",
        "/api/events/recent",
        "recent_events",
        "the newest core events (redacted)",
        "EventList",
        (Param("limit", type="integer"),),
    ),
    Route(
        "GET",
        "/api/metrics",
        "metrics_view",
        "recall latency and memory growth",
        "Metrics",
        (Param("namespace", description="AGENT/PROFILE; default every namespace the caller sees"),),
    ),
    Route(
        "GET",
        "/api/config",
        "get_config",
        "the effective config, secrets masked",
        "Config",
        errors=(403,),
        owner_only=True,
    ),
    Route(
        "PATCH",
        "/api/config",
        "patch_config",
        "validate a partial config and write it to config.yaml",
        "Config",
        body="ConfigPatch",
        errors=(400, 403, 415),
        owner_only=True,
    ),
    Route(
        "GET",
        "/api/traces",
        "list_traces",
        "L1 traces, newest first; `next` is the `after` cursor of the following page",
        "TraceList",
        (*_LIST, Param("session_id"), _AFTER),
    ),
    Route("GET", "/api/traces/{id}", "get_trace", "one trace", "Trace", _ID, errors=(404,)),
    Route(
        "PATCH",
        "/api/traces/{id}",
        "patch_trace",
        "edit a trace's summary and tags",
        "Trace",
        _ID,
        body="TracePatch",
        errors=(400, 404, 415),
    ),
    Route(
        "DELETE",
        "/api/traces/{id}",
        "delete_trace",
        "delete a trace",
        "Deleted",
        _ID,
        errors=(404,),
    ),
    Route(
        "GET",
        "/api/policies",
        "list_policies",
        "L2 policies, newest first; `next` is the `after` cursor of the following page",
        "PolicyList",
        (*_LIST, Param("status"), _AFTER),
    ),
    Route("GET", "/api/policies/{id}", "get_policy", "one policy", "Policy", _ID, errors=(404,)),
    Route(
        "GET",
        "/api/world-models",
        "list_world_models",
        "L3 world models, newest first; `next` is the `after` cursor of the following page",
        "WorldModelList",
        (*_LIST, Param("status"), _AFTER),
    ),
    Route(
        "GET",
        "/api/world-models/{id}",
        "get_world_model",
        "one world model",
        "WorldModel",
        _ID,
        errors=(404,),
    ),
    Route(
        "GET",
        "/api/skills",
        "list_skills",
        "skills with eta and lifecycle, newest first; `next` is the `after` cursor of the "
        "following page",
        "SkillList",
        (*_LIST, Param("status"), _AFTER),
    ),
    Route("GET", "/api/skills/{id}", "get_skill", "one skill", "Skill", _ID, errors=(404,)),
    Route(
        "GET",
        "/api/episodes",
        "list_episodes",
        "episodes (tasks), newest first",
        "EpisodeList",
        (
            *_LIST,
            Param("session_id"),
            Param("status"),
            _AFTER,
        ),
    ),
    Route(
        "GET",
        "/api/episodes/{id}",
        "get_episode",
        "an episode with its timeline of traces",
        "EpisodeDetail",
        _ID,
        errors=(404,),
    ),
    Route(
        "POST",
        "/api/feedback",
        "feedback",
        "explicit feedback on a trace or an episode",
        "Feedback",
        body="FeedbackInput",
        errors=(400, 404, 415),
    ),
    Route(
        "GET",
        "/api/retrieval/preview",
        "retrieval_preview",
        "the tiers turn_start would inject for q, with scores and score details",
        "RetrievalPreview",
        (
            Param("q", required=True),
            Param("namespace"),
            Param("reason", description="turn_start (default) or tool_driven"),
        ),
    ),
    Route(
        "GET",
        "/api/logs/tail",
        "logs_tail",
        "the newest log lines of the home",
        "LogList",
        (
            Param("level", description="debug|info|warning|error|critical (minimum)"),
            Param("channel"),
            Param("limit", type="integer"),
        ),
        errors=(400, 403),
        owner_only=True,
    ),
    Route(
        "GET",
        "/api/memory",
        "workspace.overview",
        "workspace MEMORY.md, backend and layered files",
        "WorkspaceOverview",
        _ROOT,
        errors=(400, 403, 404),
        owner_only=True,
    ),
    Route(
        "PUT",
        "/api/memory",
        "workspace.put_memory",
        "write MEMORY.md through the workspace backend",
        "WriteResult",
        body="MemoryWrite",
        errors=(400, 403, 404, 413, 415),
        owner_only=True,
    ),
    Route(
        "GET",
        "/api/memory/file",
        "workspace.get_file",
        "read one layered file (MEMORY.md, DREAMS.md, YYYY-MM-DD.md)",
        "FileContent",
        (*_ROOT, Param("path", required=True)),
        errors=(400, 403, 404),
        owner_only=True,
    ),
    Route(
        "PUT",
        "/api/memory/file",
        "workspace.put_file",
        "write one layered file",
        "WriteResult",
        body="FileWrite",
        errors=(400, 403, 404, 413, 415),
        owner_only=True,
    ),
    Route(
        "GET",
        "/api/memory/recall",
        "workspace.recall",
        "search the recall records",
        "RecallList",
        (*_ROOT, Param("q")),
        errors=(400, 403, 404),
        owner_only=True,
    ),
    Route("GET", "/api/openapi.json", "server.openapi", "this document", "OpenApi"),
    Route(
        "GET",
        "/events",
        "server.events",
        "server-sent events: every core event (event: core) and log line (event: log), redacted",
        "EventStream",
        (Param("since", type="integer", description="replay core events after this seq"),),
        tags=("stream",),
    ),
)
