"""embedding (see plugin.py for what it registers)."""
