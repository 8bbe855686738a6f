"""Metric-human correlations and the correlate command line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from pytest_llmjudge.metrics import MetricInput, resolve_metric
from pytest_llmjudge.metrics.correlate import main
from pytest_llmjudge.stats.correlation import correlations, correlations_by_language


def test_hand_computed_perfect_and_inverse_agreement() -> None:
    up = correlations([0.1, 0.2, 0.3, 0.9], [1, 2, 3, 4])
    assert [up.spearman, up.kendall] == pytest.approx([1.0, 1.0])
    down = correlations([4, 3, 2, 1], [1, 2, 3, 4])
    assert [down.pearson, down.spearman, down.kendall] == pytest.approx([-1.0, -1.0, -1.0])


def test_equals_scipy_with_ties() -> None:
    metric = [0.1, 0.4, 0.35, 0.8, 0.8, 0.2, 0.55, 0.9]
    human = [1, 3, 2, 4, 5, 1, 3, 5]
    result = correlations(metric, human)
    for name, function in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr), ("kendall", stats.kendalltau)):
        reference = function(metric, human)
        assert getattr(result, name) == pytest.approx(reference.statistic)
        assert getattr(result, f"{name}_p") == pytest.approx(reference.pvalue)
    assert (result.n, result.reason, result.defined) == (8, None, True)


@pytest.mark.parametrize(
    ("metric", "human", "reason"),
    [
        ([0.5, 0.7], [1, 2], "fewer than 3 usable pairs"),
        ([], [], "fewer than 3 usable pairs"),
        ([0.5, 0.5, 0.5], [1, 2, 3], "the metric values are constant"),
        ([0.1, 0.5, 0.9], [3, 3, 3], "the human scores are constant"),
    ],
)
def test_degenerate_inputs_give_nan_with_a_reason(metric: list[float], human: list[float], reason: str) -> None:
    result = correlations(metric, human)
    assert result.reason == reason and not result.defined
    assert all(math.isnan(v) for v in (result.pearson, result.spearman, result.kendall, result.kendall_p))


def test_non_finite_pairs_are_dropped_and_counted() -> None:
    result = correlations([0.1, float("nan"), 0.3, 0.5], [1, 2, 3, float("inf")])
    assert (result.n, result.dropped, result.reason) == (2, 2, "fewer than 3 usable pairs")
    with pytest.raises(ValueError):
        correlations([1.0], [1.0, 2.0])


def test_by_language_groups_and_pools() -> None:
    rows = [("hi", 0.1, 1.0), ("hi", 0.5, 2.0), ("hi", 0.9, 3.0), ("ar", 0.2, 1.0), ("ar", 0.1, 2.0)]
    result = correlations_by_language(rows)
    assert list(result) == ["ar", "hi", "all"]
    assert result["hi"].spearman == pytest.approx(1.0)
    assert result["ar"].reason == "fewer than 3 usable pairs"
    assert result["all"].n == 5
    assert "all" not in correlations_by_language(rows, pooled=None)


def test_command_line_prints_a_per_language_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [
        ("hi", "चेन्नई भारत का डेट्रॉयट है", "चेन्नई को भारत का डेट्रॉयट कहा जाता है", 4.5),
        ("hi", "बेंगलुरु", "चेन्नई को भारत का डेट्रॉयट कहा जाता है", 1.0),
        ("hi", "चेन्नई", "चेन्नई को भारत का डेट्रॉयट कहा जाता है", 3.0),
        ("ja", "富士山は3776メートルです", "富士山の標高は3776メートルです", 5.0),
        ("ja", "富士山は高い", "富士山の標高は3776メートルです", 2.5),
        ("ja", "東京タワー", "富士山の標高は3776メートルです", 1.0),
        ("ja", "no reference here", "", 1.0),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"language": lang, "output": out, "reference": ref, "human_score": score}, ensure_ascii=False)
            for lang, out, ref, score in records
        ),
        encoding="utf-8",
    )
    assert main([str(path), "--metric", "chrf", "--metric", "rouge_l", "--param", "rouge_l.tokenize=char"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:6] == ["metric", "language", "n", "pearson", "spearman", "kendall"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["chrf", "hi", "3"], ["chrf", "ja", "3"], ["chrf", "all", "6"],
        ["rouge_l", "hi", "3"], ["rouge_l", "ja", "3"], ["rouge_l", "all", "6"],
    ]  # fmt: skip
    assert lines[3].endswith("1 skipped")  # the row without a reference
    expected = stats.spearmanr(
        [resolve_metric("chrf").compute(MetricInput(out, ref)).value for _, out, ref, _ in records[:3]],
        [score for *_, score in records[:3]],
    ).statistic
    assert lines[1].split()[4] == f"{expected:+.3f}"


def test_command_line_reports_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"language": "en", "output": "x"}\n', encoding="utf-8")
    assert main([str(path), "--metric", "chrf"]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
    good = tmp_path / "good.jsonl"
    good.write_text('{"language": "en", "output": "Hello there", "reference": "Hi", "human_score": 3}\n')
    assert main([str(good), "--metric", "language"]) == 2
    assert "categorical" in capsys.readouterr().err
    assert main([str(good), "--metric", "chrf", "--param", "bleu.tokenize=intl"]) == 2
    assert "METRIC.KEY=VALUE" in capsys.readouterr().err
