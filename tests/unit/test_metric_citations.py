"""Citation Recall@k and MAP@k (MIRAGE-BENCH sec. 4.1, trec_eval definitions)."""

from __future__ import annotations

import pytest

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics import MetricInput, resolve_metric
from pytest_llmjudge.metrics.citations import (
    average_precision_at_k,
    parse_citations,
    recall_at_k,
    strip_citation_markers,
)


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("Paris [1]. Big [2][3].", ["1", "2", "3"]),
        ("See [doc3] and [doc1, doc2]; again [doc3].", ["doc3", "doc1", "doc2"]),
        ("东京[1，2]、大阪[3、4]", ["1", "2", "3", "4"]),
        ("A [link](https://x.org) is not a citation [4]", ["4"]),
        ("No citations at all.", []),
        ("", []),
    ],
)
def test_parse_citations(text: str, cited: list[str]) -> None:
    assert parse_citations(text) == cited


def test_custom_pattern() -> None:
    assert parse_citations("Paris (Source 2) and (Source 5)", r"\(Source (\d+)\)") == ["2", "5"]
    metric = resolve_metric("citation_recall@10", {"pattern": r"\{(\w+)\}"})
    value = metric.compute(MetricInput("x {a} {b}", metadata={"relevant_passages": ["b"]}))
    assert value.value == 1.0


def test_hand_computed_recall_and_average_precision() -> None:
    relevant = frozenset({"1", "2", "4"})
    cited = ["3", "1", "5", "2"]
    # Hits at ranks 2 and 4: recall 2/3; AP = (1/2 + 2/4) / |R| = 1/3.
    assert recall_at_k(cited, relevant, 10) == pytest.approx(2 / 3)
    assert average_precision_at_k(cited, relevant, 10) == pytest.approx((1 / 2 + 2 / 4) / 3)
    # Cut at k = 2: one hit, precision 1/2 at rank 2; the denominator stays |R| = 3.
    assert recall_at_k(cited, relevant, 2) == pytest.approx(1 / 3)
    assert average_precision_at_k(cited, relevant, 2) == pytest.approx((1 / 2) / 3)
    # All relevant cited first: both 1.
    assert recall_at_k(["1", "2", "4", "9"], relevant, 10) == 1.0
    assert average_precision_at_k(["1", "2", "4", "9"], relevant, 10) == 1.0


def test_metrics_on_cases() -> None:
    item = MetricInput(
        "Taj Mahal was built by Shah Jahan [3]. It is in Agra [2].",
        metadata={"relevant_passages": {"1": 2, "2": 1, "3": 0}, "passage_ids": [1, 2, 3]},
    )
    recall = resolve_metric("citation_recall@10").compute(item)
    assert recall.value == 0.5
    assert recall.detail == {"cited": ["3", "2"], "relevant": ["1", "2"], "hits": ["2"], "k": 10}
    assert resolve_metric("citation_map@10").compute(item).value == pytest.approx((1 / 2) / 2)
    assert resolve_metric("citation_map@1").compute(item).value == 0.0


def test_citations_from_metadata_ids_numeric_and_unknown_passages() -> None:
    given = MetricInput("no markers", metadata={"relevant_passages": ["2"], "cited_passages": [2, 7]})
    assert resolve_metric("citation_map@10").compute(given).value == 1.0
    numeric = MetricInput("Seen in [doc2].", metadata={"relevant_passages": ["passage-2"]})
    assert resolve_metric("citation_recall@10").compute(numeric).value == 0.0
    assert resolve_metric("citation_recall@10", {"numeric_ids": True}).compute(numeric).value == 1.0
    filtered = MetricInput("[9] then [2]", metadata={"relevant_passages": ["2"], "passage_ids": ["1", "2"]})
    assert resolve_metric("citation_map@10").compute(filtered).value == 1.0  # [9] is not a passage


def test_degenerate_cases() -> None:
    no_citations = MetricInput("An answer without citations.", metadata={"relevant_passages": ["1"]})
    assert resolve_metric("citation_recall@10").compute(no_citations).value == 0.0
    assert resolve_metric("citation_map@10").compute(no_citations).value == 0.0
    metadatas: list[dict[str, object]] = [{}, {"relevant_passages": []}, {"relevant_passages": {"1": 0}}]
    for metadata in metadatas:
        with pytest.raises(MetricError, match="needs metadata.relevant_passages"):
            resolve_metric("citation_recall@10").compute(MetricInput("[1]", metadata=metadata))
    with pytest.raises(MetricError, match="list of passage ids"):
        resolve_metric("citation_recall@10").compute(MetricInput("[1]", metadata={"relevant_passages": "1"}))
    with pytest.raises(MetricError, match="invalid pattern"):
        resolve_metric("citation_recall@10", {"pattern": "(["})


def test_strip_citation_markers_keeps_bracketed_prose() -> None:
    assert strip_citation_markers("330 m [1], 1889 [doc2, doc3] [see above]").split() == [
        "330", "m", ",", "1889", "[see", "above]",
    ]  # fmt: skip
