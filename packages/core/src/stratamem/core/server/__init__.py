"""The gRPC service of a home: ``stratamem serve``, its handlers, access control and socket handling.

Importing this package is cheap; the server pieces load grpc and the core only when used.
"""
