"""The ranges the built-in reference metrics' scores lie in, by metric name.

Each metric module's docstring gives its scale (the table in ``metrics/__init__.py``):
chrF, chrF++ and BLEU are on 0-100 (sacrebleu's sentence scores), ROUGE-L, numeric fidelity,
the LRM2QAS family and the citation metrics on 0-1. Rubric ranges are not here: a rubric
carries its own scale (``judges/rubrics.py``). The range is what the mean's betting
interval rests on (``stats/betting.py``), and what report charts use for their axes.

Degenerate cases: a name not listed (``language`` is categorical; a metric plugin; scores
recorded under a free name) has no known scale: ``None``. ``lrm2qas_*`` components share
``lrm2qas``'s range; ``citation_recall@5`` is ``citation_recall``'s.
"""

from __future__ import annotations

REFERENCE_SCALES: dict[str, tuple[float, float]] = {
    "bleu": (0.0, 100.0),
    "chrf": (0.0, 100.0),
    "chrf++": (0.0, 100.0),
    "chrf_pp": (0.0, 100.0),
    "rouge_l": (0.0, 1.0),
    "numeric_fidelity": (0.0, 1.0),
    "lrm2qas": (0.0, 1.0),
    "citation_recall": (0.0, 1.0),
    "citation_map": (0.0, 1.0),
}


def reference_scale(metric: str) -> tuple[float, float] | None:
    """``(low, high)`` of a built-in reference metric's scores, or None when unknown."""
    name = metric.split("@", 1)[0]
    if name.startswith("lrm2qas_"):
        name = "lrm2qas"
    return REFERENCE_SCALES.get(name)
