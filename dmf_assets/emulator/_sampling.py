"""Weighted sampling helpers shared by the record factory, the simulation and the synthetic frames."""

from __future__ import annotations

import bisect
import math
import random


def allocate(weights: list[float], n: int) -> list[int]:
    """Exactly n slots split by weight (largest remainders), as a list of indices."""
    total = sum(weights)
    raw = [w * n / total for w in weights]
    counts = [int(x) for x in raw]
    order = sorted(range(len(weights)), key=lambda i: (-(raw[i] - counts[i]), i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return [i for i, c in enumerate(counts) for _ in range(c)]


def cumulative(weights: list[float]) -> list[float]:
    out, s = [], 0.0
    for w in weights:
        s += w
        out.append(s)
    return out


def pick(rng: random.Random, cum: list[float]) -> int:
    return min(len(cum) - 1, bisect.bisect_right(cum, rng.random() * cum[-1]))


def poisson(rng: random.Random, lam: float) -> int:
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k
