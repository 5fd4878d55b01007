"""What the benchmarks print of their timings (imported from the bench scripts' folder)."""

from __future__ import annotations

import statistics


def median_p90(values: list[float]) -> tuple[float, float]:
    """The median and the 90th percentile of ``values`` (the largest when fewer than ten)."""
    ordered = sorted(values)
    p90 = ordered[int(len(ordered) * 0.9) - 1] if len(ordered) >= 10 else ordered[-1]
    return statistics.median(ordered), p90
