"""The metric registry: names used in suite thresholds, parameters, and lazy imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics import BUILTIN_METRICS, Metric, MetricInput, resolve_metric
from pytest_llmjudge.metrics.base import check_required


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("chrf", "chrf"),
        ("chrf++", "chrf++"),
        ("chrf_pp", "chrf++"),
        ("ChrF++", "chrf++"),
        ("bleu", "bleu"),
        ("rouge_l", "rouge_l"),
        ("language", "language"),
        ("numeric_fidelity", "numeric_fidelity"),
        ("lrm2qas", "lrm2qas"),
        ("lrm2qas_bert", "lrm2qas_bert"),
        ("lrm2qas_kc", "lrm2qas_kc"),
        ("lrm2qas_num", "lrm2qas_num"),
        ("lrm2qas_ef", "lrm2qas_ef"),
        ("citation_recall@5", "citation_recall@5"),
        ("citation_map@10", "citation_map@10"),
        ("citation_recall", "citation_recall@10"),
    ],
)
def test_every_suite_name_resolves_to_a_metric(name: str, canonical: str) -> None:
    metric = resolve_metric(name)
    assert isinstance(metric, Metric)
    assert metric.name == canonical
    assert isinstance(metric.higher_is_better, bool)
    assert isinstance(metric.requires, frozenset)


def test_registry_lists_the_documented_names() -> None:
    assert set(BUILTIN_METRICS) == {
        "chrf", "chrf++", "chrf_pp", "bleu", "rouge_l", "language", "numeric_fidelity",
        "lrm2qas", "lrm2qas_bert", "lrm2qas_kc", "lrm2qas_num", "lrm2qas_ef",
        "citation_recall@K", "citation_map@K",
    }  # fmt: skip


def test_unknown_name_lists_known_names_and_suggests_a_close_one() -> None:
    with pytest.raises(MetricError) as excinfo:
        resolve_metric("rougel")
    message = str(excinfo.value)
    assert "did you mean 'rouge_l'?" in message
    assert "chrf++" in message and "citation_map@K" in message


def test_unknown_name_without_close_match_still_lists_names() -> None:
    with pytest.raises(MetricError, match="unknown metric 'perplexity'. Known metrics: bleu"):
        resolve_metric("perplexity")


def test_at_k_suffix_sets_k_and_must_agree_with_params() -> None:
    assert resolve_metric("citation_map@3", {"k": 3}).name == "citation_map@3"
    with pytest.raises(MetricError, match="sets k=3"):
        resolve_metric("citation_map@3", {"k": 4})
    with pytest.raises(MetricError, match="positive integer"):
        resolve_metric("citation_recall@0")
    with pytest.raises(MetricError, match="unknown metric"):
        resolve_metric("chrf@3")


def test_unknown_parameters_are_rejected_with_the_accepted_ones() -> None:
    with pytest.raises(MetricError, match="unknown parameter.*tokenise; accepted: tokenize"):
        resolve_metric("bleu", {"tokenise": "intl"})
    with pytest.raises(MetricError, match="it takes none"):
        resolve_metric("chrf", {"beta": 3})


def test_parameters_reach_the_metric() -> None:
    assert resolve_metric("lrm2qas", {"lambdas": "factoid"}).lambdas["bert"] == 0.6  # type: ignore[attr-defined]
    assert resolve_metric("lrm2qas_kc", {"eta": 0.5}).eta == 0.5  # type: ignore[attr-defined]


def test_missing_required_field_is_a_metric_error_naming_the_field() -> None:
    with pytest.raises(MetricError, match="chrf needs a reference"):
        resolve_metric("chrf").compute(MetricInput(output="x", reference="  "))
    with pytest.raises(MetricError, match="lrm2qas needs an input"):
        resolve_metric("lrm2qas").compute(MetricInput(output="x", reference="y"))
    check_required("bleu", frozenset({"reference"}), MetricInput(output="", reference="r"))


def test_importing_the_package_imports_no_optional_dependency() -> None:
    # ROUGE-L, created and scoring, imports none either: not rouge-score, whose tokenizer imports nltk.
    code = (
        "import sys, pytest_llmjudge.metrics, pytest_llmjudge.stats.correlation\n"
        "heavy = {'sacrebleu', 'rouge_score', 'py3langid', 'sentence_transformers', 'scipy', 'nltk'}\n"
        "rouge = pytest_llmjudge.metrics.resolve_metric('rouge_l')\n"
        "assert rouge.compute(pytest_llmjudge.metrics.MetricInput('a b c', 'a c')).value == 0.8\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_one_door_builds_plugin_metrics_from_a_registry_mapping() -> None:
    # A run resolves names over the registry's metrics (built-ins and plugins) with the same
    # parser and errors as the built-ins alone.
    def recall(*, k: int = 10) -> Metric:
        return resolve_metric(f"citation_recall@{k}")

    def plain(**options: object) -> Metric:
        return resolve_metric("chrf")

    metrics = {**BUILTIN_METRICS, "my_recall@K": recall, "MyRecall": recall, "open": plain}
    assert resolve_metric("my_recall@3", metrics=metrics).name == "citation_recall@3"
    assert resolve_metric("my_recall", metrics=metrics).name == "citation_recall@10"
    assert resolve_metric("MyRecall@4", metrics=metrics).name == "citation_recall@4"  # plain name taking k
    assert resolve_metric("chrf_pp", metrics=metrics).name == "chrf++"
    with pytest.raises(MetricError, match="unknown metric 'my_recal'; did you mean 'my_recall@K'"):
        resolve_metric("my_recal", metrics=metrics)
    with pytest.raises(MetricError, match="positive integer"):
        resolve_metric("my_recall@0", metrics=metrics)
    with pytest.raises(MetricError, match=r"bad parameters for metric 'my_recall': unknown parameter\(s\) kk"):
        resolve_metric("my_recall", {"kk": 1}, metrics=metrics)
    # A factory taking **options checks them itself: its TypeError is a bad-parameters error.
    assert resolve_metric("open", {"x": 1}, metrics=metrics).name == "chrf"

    def picky(**options: object) -> Metric:
        raise TypeError(f"picky takes no {', '.join(options)}")

    with pytest.raises(MetricError, match="bad parameters for metric 'picky': picky takes no x"):
        resolve_metric("picky", {"x": 1}, metrics={"picky": picky})
