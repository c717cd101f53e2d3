"""Generated protobuf and gRPC code for ``proto/stratamem/v1`` (built from proto/, never edited)."""
