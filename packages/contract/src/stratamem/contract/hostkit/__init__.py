"""The host kit: what every adapter needs once, whatever its host.

Tool definitions and validation (``tools``), the recalled-context block
(``context_block``), the durable turn spool (``spool``), the thin-client
connection to the resident service (``client``), the workspace memory tools
(``workspace_tools``), the recall normalisation (``recall_text``) and lending the
host's LLM to the service (``host_llm``). Adapters keep only their host's ordering
and wiring; they import this and ``stratamem.contract``, never core internals.
"""
