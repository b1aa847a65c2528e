"""The statistics the gate's timing verdicts rest on: medians and the Mann-Whitney U rank test.

Exact for small samples (both sides up to 30), normal approximation with tie correction
above; written here rather than taken from scipy so the gate has no heavy dependency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based) of `values`, and the sizes of the groups of ties."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        average = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = average
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


# Below this many arrangements the exact distribution of U is enumerated (no ties only).
_EXACT_LIMIT = 30


def _exact_upper_tail(u: float, n1: int, n2: int) -> float:
    """P(U >= u) under the null hypothesis, with no ties, by counting arrangements."""
    # counts[m][n] is a list: number of orderings of m x's and n y's with each value of U.
    table: dict[tuple[int, int], list[int]] = {}

    def counts(m: int, n: int) -> list[int]:
        if m == 0 or n == 0:
            return [1]
        key = (m, n)
        if key not in table:
            # The largest element is an x (it beats all n y's) or a y.
            with_x = counts(m - 1, n)
            with_y = counts(m, n - 1)
            out = [0] * (m * n + 1)
            for k, c in enumerate(with_x):
                out[k + n] += c
            for k, c in enumerate(with_y):
                out[k] += c
            table[key] = out
        return table[key]

    dist = counts(n1, n2)
    total = sum(dist)
    start = max(0, math.ceil(u - 1e-9))
    return sum(dist[start:]) / total


@dataclass
class RankTest:
    u: float            # Mann-Whitney U of the first sample (pairs where it is larger)
    p_greater: float    # one-sided p: the first sample tends to be larger
    p_less: float       # one-sided p: the first sample tends to be smaller
    method: str         # "exact" or "normal"


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> RankTest:
    """Mann-Whitney U test of x against y, both one-sided p-values.

    Exact when both samples are small and untied; otherwise the normal approximation
    with the tie correction of the variance and a continuity correction.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney needs two non-empty samples")
    ranks, ties = _ranks(list(x) + list(y))
    r1 = sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    untied = all(t == 1 for t in ties)
    if untied and n1 <= _EXACT_LIMIT and n2 <= _EXACT_LIMIT:
        return RankTest(u=u1, p_greater=_exact_upper_tail(u1, n1, n2),
                        p_less=_exact_upper_tail(u2, n1, n2), method="exact")
    n = n1 + n2
    tie_term = sum(t ** 3 - t for t in ties) / (n * (n - 1)) if n > 1 else 0.0
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    mean = n1 * n2 / 2.0
    if variance <= 0:
        # Every value equal: no evidence either way.
        return RankTest(u=u1, p_greater=1.0, p_less=1.0, method="normal")
    sd = math.sqrt(variance)
    z_greater = (u1 - mean - 0.5) / sd
    z_less = (mean - u1 - 0.5) / sd
    return RankTest(u=u1, p_greater=_upper_normal(z_greater), p_less=_upper_normal(z_less), method="normal")


def _upper_normal(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of no values")
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2
