"""The two statistics the attempt summaries use: a success rate's interval, and a median.

`wilson_interval(k, n)` is the 95% Wilson score interval for k successes in n trials: the
range of success rates that k of n does not rule out. It is chosen over the textbook
"p ± 1.96·sqrt(p(1-p)/n)" because that one collapses to a zero-width interval at 0 of n or
n of n, which is exactly where a small series of attempts often lands.

Not here: reading recordings (outcomes.py) or anything beyond these two figures; there is
no hypothesis test and no claim that attempts of a changing server are independent draws.
"""

import math
import statistics

Z95 = 1.959963984540054  # the normal quantile for a two-sided 95% interval


def wilson_interval(k, n, z=Z95):
    """(low, high) of the Wilson score interval for k of n, or None when n is 0."""
    if n == 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"k must be between 0 and n, got k={k}, n={n}")
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # subtle: at k=0 and k=n an end is exactly 0 or 1; computed, it misses by a rounding
    # error either way (16 of 16 once gave 1.0000000000000002)
    return (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)


def median(values):
    """The median of the values that are known (not None), or None when none is."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None
