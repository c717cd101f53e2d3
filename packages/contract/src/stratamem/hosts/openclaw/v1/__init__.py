"""Generated messages and stubs of ``stratamem.openclaw.v1`` (compiled from ``proto/``)."""
