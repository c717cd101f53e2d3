"""Generated gRPC code of the OpenClaw host service."""
