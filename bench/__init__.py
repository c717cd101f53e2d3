"""Stratamem benchmarks: ratios against baselines measured side by side in one run."""
