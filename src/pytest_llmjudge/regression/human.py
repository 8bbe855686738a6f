"""The prediction-powered estimate of the human-scale change in a regression comparison.

What it is
    A regression item compares the judge's scores of the candidate and of the baseline on the
    ``N`` cases scored on both sides. When some of those cases carry a human label (``human:``
    on the case, or a ``human_labels:`` file) in the candidate run **and** in the baseline
    (a baseline saves each case's aggregated label since this estimate exists), the item also
    estimates how much the **human** score changed, with prediction-powered inference
    (PPI++; Angelopoulos, Duchi, Zrnic 2023, arXiv:2311.01453; ``stats/prediction_powered.py``)
    applied to the paired differences::

        f_i = judge(candidate_i) - judge(baseline_i)      on all N paired cases
        y_i = human(candidate_i) - human(baseline_i)      on the n pairs labelled on both sides
        theta = lambda * mean_N(f) + mean_n(y - lambda * f)        (PPI++ mean estimate)

    ``theta`` estimates the **mean human-score change over the N paired cases** (candidate
    minus baseline, on the labels' scale: positive is a higher human score whatever the
    metric's direction). It is unbiased, and its interval valid, when the ``n`` doubly-labelled
    pairs are a simple random sample of the ``N`` pairs (``--llmjudge-label-queue`` draws such
    samples); labels chosen for being interesting are not. ``lambda`` is tuned on the same
    pairs (clipped to [0, 1]); ``lambda = 0`` is the human-only mean of the ``y_i``.

    The small-sample guards of the ``human_mean`` aggregates apply (Student's ``t`` with
    ``n - 1`` degrees of freedom; a residual-variance floor from the range of a difference,
    ``[-(high - low), high - low]``, when the metric's scale is known; the interval clipped
    to that range). ``benchmarks/ppi_regression_coverage.py`` measures the coverage.

    The estimate is information: the judge-scale test decides the item (``regression.compare``).

Degenerate cases: no labels on one side gives nothing (None: the item shows no human line);
fewer than :data:`MIN_PAIRS` doubly-labelled pairs (none in common included) give no
estimate, only a line saying how many there were; a human label that is not a finite number is not used;
a pair whose judge score is missing on either side is not one of the ``N`` (as in the test).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_llmjudge.stats.prediction_powered import ppi_mean

MIN_PAIRS = 5
"""Fewest doubly-labelled pairs an estimate needs (the ``min_labels`` default of ``human_mean``)."""


@dataclass(frozen=True)
class HumanChange:
    """The PPI++ estimate of the mean human-score change over the ``N`` paired cases."""

    value: float | None
    """Candidate minus baseline on the human scale (None: too few doubly-labelled pairs)."""
    low: float | None
    high: float | None
    n: int
    """Pairs labelled on both sides (and judge-scored on both)."""
    N: int
    """Pairs judge-scored on both sides."""
    judge_change: float | None = None
    """The judge's mean change over the N pairs (for comparison)."""
    human_only: float | None = None
    """The mean of the n labelled differences alone."""
    lam: float | None = None
    confidence: float = 0.95

    def text(self) -> str:
        """One line for the item's message: what was estimated, from what, how sure."""
        from pytest_llmjudge.util.formatting import format_fixed

        if self.value is None:
            return (
                f"only {self.n} of the {self.N} paired cases carry a human label on both sides; "
                f"a human-scale estimate needs at least {MIN_PAIRS}"
            )
        return (
            f"human-scale change (PPI++) {_signed(self.value)} "
            f"({self.confidence:.0%} CI [{format_fixed(self.low)}, {format_fixed(self.high)}]): the mean "
            f"human-score change over the {self.N} paired cases, from the judge's change on all {self.N} and "
            f"human labels on both sides of {self.n} (judge change {_signed(self.judge_change)}, "
            f"human-only {_signed(self.human_only)}, lambda {format_fixed(self.lam)}); "
            "valid if those pairs are a random sample; information only, the judge-scale test decides"
        )


def _signed(value: float | None) -> str:
    from pytest_llmjudge.util.formatting import format_fixed

    text = format_fixed(value)
    return text if value is None or text.startswith("-") or text == "0.000" else "+" + text


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def human_change(
    candidate: Mapping[str, float | None],
    baseline: Mapping[str, float | None],
    candidate_human: Mapping[str, float],
    baseline_human: Mapping[str, float],
    *,
    scale: tuple[float, float] | None = None,
    confidence: float = 0.95,
    floor: bool = True,
) -> HumanChange | None:
    """The human-scale change of one comparison (module docstring); None when one side has no labels.

    ``candidate``/``baseline``: judge scores by case id (None: unscored); ``*_human``: the
    aggregated human label of the labelled cases; ``scale``: the metric's (low, high).
    ``floor=False`` drops the residual-variance floor (for ``benchmarks/``: it undercovers).
    """
    paired = sorted(c for c in candidate if _finite(candidate[c]) and _finite(baseline.get(c)))
    if not candidate_human or not baseline_human:
        return None
    labelled = [c for c in paired if _finite(candidate_human.get(c)) and _finite(baseline_human.get(c))]
    judged = {c: float(candidate[c] or 0.0) - float(baseline[c] or 0.0) for c in paired}
    judge_change = math.fsum(judged.values()) / len(judged) if judged else None
    if len(labelled) < MIN_PAIRS:
        return HumanChange(None, None, None, len(labelled), len(paired), judge_change, confidence=confidence)
    labels = [candidate_human[c] - baseline_human[c] for c in labelled]
    span = None if scale is None else scale[1] - scale[0]
    # The residual-variance floor of stats/prediction_powered.py for a spread of one scale width
    # (all pairs agree but one, which moved by the whole scale); ppi_mean's floor takes it from
    # the width of the ``scale`` it is given.
    estimate = ppi_mean(
        labels,
        [judged[c] for c in labelled],
        [judged[c] for c in paired],
        confidence=confidence,
        student=True,
        scale=None if span is None or not floor else (-span / 2, span / 2),
    )
    low, high = estimate.estimate.ci_low, estimate.estimate.ci_high
    if span is not None and low is not None and high is not None:
        # A difference of two labels lies in [-(high - low), high - low]: clipping never loses coverage.
        low, high = max(low, -span), min(high, span)
    return HumanChange(
        estimate.estimate.value,
        low,
        high,
        len(labelled),
        len(paired),
        judge_change,
        estimate.human_only.value,
        estimate.lam,
        confidence,
    )
