"""Drive the real Hermes ``AIAgent`` like a user: session 1 states a fact, a NEW agent asks about it,
then session 1 is resumed. Prints one JSON line with the session ids. Reads config from $HERMES_HOME."""

from __future__ import annotations

import faulthandler
import json
import os
import sys


def make_agent(session_id: str | None = None):  # type: ignore[no-untyped-def]
    from hermes_cli.config import load_config
    from hermes_cli.runtime_provider import resolve_runtime_provider
    from run_agent import AIAgent

    cfg = load_config()
    rt = resolve_runtime_provider(requested="custom")
    kwargs = {"session_id": session_id} if session_id else {}
    return AIAgent(
        base_url=rt["base_url"],
        api_key=rt["api_key"],
        provider=rt["provider"],
        api_mode=rt.get("api_mode"),
        model=cfg["model"]["default"],
        quiet_mode=True,
        platform="cli",
        max_iterations=4,
        skip_context_files=True,
        **kwargs,
    )


def end(agent, messages) -> None:  # type: ignore[no-untyped-def]
    agent.shutdown_memory_provider(messages)  # on_session_end + shutdown_all (as `hermes -z` does)
    agent.close()


def main() -> int:
    # a hang shows every thread's stack on stderr (the test prints it) instead of a bare timeout
    faulthandler.dump_traceback_later(float(os.environ.get("DRIVE_AGENT_DUMP_S", "200")), exit=True)
    fact, question, follow_up = sys.argv[1:4]
    a1 = make_agent()
    r1 = a1.run_conversation(fact)
    s1 = a1.session_id
    end(a1, r1["messages"])

    a2 = make_agent()
    r2 = a2.run_conversation(question)
    s2 = a2.session_id
    end(a2, r2["messages"])

    a3 = make_agent(session_id=s1)  # resume session 1 with its own visible history
    r3 = a3.run_conversation(follow_up, conversation_history=r1["messages"])
    end(a3, r3["messages"])
    print(
        json.dumps(
            {
                "s1": s1,
                "s2": s2,
                "s3": a3.session_id,
                "replies": [
                    r1.get("final_response"),
                    r2.get("final_response"),
                    r3.get("final_response"),
                ],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
