"""pass@k and pass^k of one case from its repeated judgments: unbiased estimates.

A case judged ``n`` times (``judge.repeats: n``, or recorded ``samples``), ``c`` of which
meet a case threshold (``task_quality >= 2``), has an unknown per-attempt pass
probability ``p``. Two questions about ``k`` attempts:

* pass@k, "at least one of k attempts passes", ``1 - (1 - p)^k``. Chen et al. 2021,
  "Evaluating Large Language Models Trained on Code" (arXiv:2107.03374), eq. 1, estimate it
  by drawing ``k`` of the ``n`` samples without replacement::

      pass@k = 1 - C(n - c, k) / C(n, k)

  which is 1 when ``n - c < k`` (every k-subset holds a pass). Computed as their
  numerically stable product ``1 - prod_{i = n-c+1}^{n} (1 - k / i)`` (the same paper's
  numpy code), never through the binomial coefficients themselves.
* pass^k ("pass-hat-k"), "all k attempts pass", ``p^k``. Yao et al. 2024, "tau-bench: A
  Benchmark for Tool-Agent-User Interaction in Real-World Domains" (arXiv:2406.12045),
  section 3, define it as the same k-subset draw with every drawn sample passing::

      pass^k = C(c, k) / C(n, k) = prod_{i=0}^{k-1} (c - i) / (n - i)

  which is 0 when ``c < k``.

Both are unbiased for their target given ``n`` independent attempts with the same ``p``:
``C(c, k) / C(n, k)`` is the probability that k draws without replacement from the n
samples are all passes, and averaging that over the binomial law of ``c`` gives ``p^k``
(likewise ``1 - C(n-c, k)/C(n, k)`` gives ``1 - (1-p)^k``). The plug-in ``(c/n)^k`` is
biased; at ``k = n`` both estimates are the indicators "all n passed" and "some passed".
``k = 1`` gives ``c / n`` for both.

Degenerate cases: ``k < 1``, ``c`` outside ``[0, n]`` and ``k > n`` (no k-subset of n
samples exists, so there is no unbiased estimate from them) raise :class:`ValueError`;
callers name the case (``suite/aggregate.py``).
"""

from __future__ import annotations

import math


def _check(n: int, c: int, k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not 0 <= c <= n:
        raise ValueError(f"c (passing samples) must lie in [0, n] = [0, {n}], got {c}")
    if k > n:
        raise ValueError(f"k = {k} exceeds the n = {n} sample(s): no k of them can be drawn")


def pass_at_k(n: int, c: int, k: int) -> float:
    """``1 - C(n - c, k) / C(n, k)``: at least one of k samples drawn from the n passes."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """``C(c, k) / C(n, k)``: all of k samples drawn from the n pass."""
    _check(n, c, k)
    if c < k:
        return 0.0
    return math.prod((c - i) / (n - i) for i in range(k))
