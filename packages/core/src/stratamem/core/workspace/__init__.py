"""workspace (see plugin.py for what it registers)."""
