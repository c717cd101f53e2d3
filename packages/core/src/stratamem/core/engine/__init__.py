"""The engine behind ``LocalCore``: one module per concern, each over the shared ``EngineServices``.

- ``services``: the plumbing every concern shares (SQLite runner, CPU executor, embedding, store,
  journal, event bus, config, per-session locks).
- ``sessions``: sessions and episodes (open/close/recover, episode rows and their meta).
- ``turns``: the start of a turn — validate, route (relation -> episode), record the user turn, recall.
- ``commit``: the end of a turn — build the trace rows and commit them to the journal (durable ack);
  sub-agent and tool outcomes.
- ``recall``: search, read-your-writes over the journal, decision-repair prepending.
- ``traces``: get / timeline / list / update / delete over traces.
- ``layers``: the learned layers' records (policies, world models, skills).
- ``feedback``: explicit/implicit feedback and its effect on a trace's value.
- ``maintenance``: the background index/optimize/embedding-retry loop.
- ``assemble``: ``open_local_core`` — build a ``LocalCore`` from a home.

Every function below the facade takes the caller's ``Namespace`` as a required argument.
"""
