"""Make the repository's ``bench`` package importable (it is run as ``python -m bench`` from the root)."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
