"""Generated gRPC code of the DSH host service."""
