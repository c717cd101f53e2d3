"""A scripted "model" for the learning tests: answers each learning task (by its
``stratamem-task:`` marker) from the request payload, served by the real loopback HTTP stub."""

from __future__ import annotations

import json
from typing import Any

from stub_server import StubAnswer

from stratamem.core.learning.prompts import task_of


def payload_of(body: Any) -> dict[str, Any]:
    msgs = body.get("messages") or []
    try:
        data = json.loads(msgs[1]["content"])
    except (IndexError, KeyError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def answer(task: str | None, p: dict[str, Any]) -> dict[str, Any]:
    if task == "capture.reflect":
        return {
            "steps": [
                {
                    "index": s["index"],
                    "reflection": s.get("reflection")
                    or "I took this step because the deploy needs the image before compose up.",
                    "alpha": 0.7,
                    "usable": True,
                }
                for s in p.get("steps", [])
            ]
        }
    if task == "reward.score":
        fb = " ".join(p.get("feedback", [])).lower()
        bad = any(w in fb for w in ("negative", "fail", "broke", "wrong"))
        good = any(w in fb for w in ("positive", "works", "great", "thanks"))
        s = -0.8 if bad else 0.9 if good else 0.0
        return {
            "goal_achievement": s,
            "process_quality": s,
            "user_satisfaction": s,
            "reason": "stub",
        }
    if task == "l2.induce":
        return {
            "title": "Deploy the web service to staging with docker compose",
            "trigger": "deploying the web service to the staging environment",
            "procedure": "Build the image with docker build, then start it with docker compose up -d",
            "verification": "curl the /health endpoint of staging",
            "boundary": "staging only",
            "rationale": "worked in every past staging deploy",
            "caveats": [],
            "confidence": 0.8,
            "support_trace_ids": [t["id"] for t in p.get("traces", [])],
        }
    if task == "l3.abstract":
        return {
            "title": "Staging runs the web service under docker compose",
            "domain_tags": ["docker", "staging"],
            "environment": [
                {"label": "staging host", "description": "docker compose manages the web service"}
            ],
            "inference": [{"label": "health", "description": "/health answers once compose is up"}],
            "constraints": [
                {"label": "no privileged", "description": "containers run unprivileged"}
            ],
            "body": "The staging web service is built with docker build and run by docker compose.",
            "confidence": 0.7,
            "supersedes_world_ids": [],
        }
    if task == "skill.crystallize":
        tools = sorted({t for e in p.get("evidence", []) for t in e.get("tools", [])})
        avoid = [str(c.get("action", ""))[:160] for c in p.get("counter_examples", [])][:2]
        return {
            "name": "Deploy staging compose",
            "display_title": "Deploy the web service to staging",
            "summary": "Deploy the web service to staging: docker build the image, then docker compose up",
            "parameters": ["service"],
            "preconditions": ["docker is installed"],
            "steps": [
                "Build the service image with docker build",
                "Start the staging service with docker compose up -d",
                "Check the staging /health endpoint",
            ],
            "examples": [],
            "tools": tools,
            "decision_guidance": {
                "preference": ["Start staging with docker compose up -d after docker build"],
                "anti_pattern": avoid,
            },
            "tags": ["docker"],
        }
    if task == "decision.repair":
        low = p.get("low_value") or [{}]
        return {
            "preference": "Use docker compose up -d (unprivileged) for the staging deploy",
            "anti_pattern": "Do not repeat: " + str(low[0].get("action", ""))[:160],
            "severity": "warn",
            "confidence": 0.8,
        }
    return {}


def handler(kind: str, body: Any) -> StubAnswer | None:
    if kind != "chat" or not isinstance(body, dict):
        return None
    task = task_of(body.get("messages"))
    return StubAnswer(content=json.dumps(answer(task, payload_of(body))))
