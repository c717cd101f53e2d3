"""Generated gRPC code of the host services (one sub-package per agent host)."""
