"""The host kit: what every adapter needs once, whatever its host.

Tool definitions and validation (``tools``), the recalled-context block
(``context_block``), the durable turn spool (``spool``) and the thin-client
connection to the resident service (``client``). Adapters keep only their host's
ordering and wiring; they import this and ``stratamem.contract``, never core internals.
"""
