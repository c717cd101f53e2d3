"""Generated gRPC code of ``stratamem.dsh.v1`` (the DSH host service)."""
