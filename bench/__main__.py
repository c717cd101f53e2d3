"""``python -m bench --size small|standard|full --out DIR``."""

from bench.runner import main

raise SystemExit(main())
