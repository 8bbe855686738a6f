"""G-Eval's probability-weighted score (``judges/logprobs.py``): hand-computed distributions."""

from __future__ import annotations

import math

import pytest

from pytest_llmjudge.judges.logprobs import ScoreDistribution, digit_tokens, score_distribution
from pytest_llmjudge.testing.server import _logprobs_block


def tokens_of(text: str, alternatives: dict[str, float]) -> tuple[tuple[int, str, tuple[tuple[str, float], ...]], ...]:
    found = digit_tokens(_logprobs_block(text, 20, alternatives)["content"])
    assert found is not None
    return found


def test_the_expected_score_weights_the_scale_by_its_normalised_probabilities() -> None:
    text = '{"justification": "fine", "score": 3}'
    # 3: 0.5, 4: 0.2, " 3" (the same score, another token): 0.1, "three": 0.2 (off the scale: dropped)
    alternatives = {"3": math.log(0.5), "4": math.log(0.2), " 3": math.log(0.1), "three": math.log(0.2)}
    found = score_distribution(text, tokens_of(text, alternatives), "q", (1, 2, 3, 4, 5))
    assert isinstance(found, ScoreDistribution)
    assert found.mass == pytest.approx(0.8)
    assert dict(found.probabilities) == pytest.approx({1: 0.0, 2: 0.0, 3: 0.75, 4: 0.25, 5: 0.0})
    assert found.expected == pytest.approx(3 * 0.75 + 4 * 0.25)


def test_a_compound_reply_reads_each_rubrics_own_score_token() -> None:
    text = '{"a": {"justification": "x 1", "score": 2}, "b": {"justification": "y", "score": 0}}'
    tokens = tokens_of(text, {"2": math.log(0.9), "0": math.log(0.3), "1": math.log(0.1)})
    a = score_distribution(text, tokens, "a", (0, 1, 2), ("a", "b"))
    b = score_distribution(text, tokens, "b", (0, 1, 2), ("a", "b"))
    assert isinstance(a, ScoreDistribution) and isinstance(b, ScoreDistribution)
    # The justification's "1" is an integer token too, but not at a score: never read.
    assert a.expected == pytest.approx((2 * 0.9 + 0 * 0.3 + 1 * 0.1) / 1.3) == b.expected


def test_without_probabilities_the_reason_is_given_never_a_distribution() -> None:
    text = '{"justification": "fine", "score": 2}'
    assert score_distribution(text, None, "q", (0, 1, 2)) == "the provider returned no token log-probabilities"
    assert score_distribution("{}", (), "q", (0, 1, 2)) == "no score found in the reply to read probabilities at"
    off_scale = tokens_of(text, {"7": 0.0})
    assert score_distribution(text, off_scale, "q", (0, 1, 2)) == (
        "no probability on the scale's scores at the score token"
    )
    assert digit_tokens("not a list") is None


def test_a_refused_setting_is_named_and_not_retried() -> None:
    from pytest_llmjudge.errors import ProviderCallError
    from pytest_llmjudge.judges.base import ProviderRequest
    from pytest_llmjudge.judges.openai import rejected_setting

    request = ProviderRequest(provider="openai", model="o3-mini", system="s", user="u", top_logprobs=20)
    refused = ProviderCallError(
        "HTTP 400: Unsupported value: 'temperature' does not support 0 with this model.", retryable=False, status=400
    )
    said = rejected_setting(refused, request)
    assert str(said).startswith("model o3-mini does not accept temperature 0: set judge.temperature to 1")
    assert not said.retryable
    other = ProviderCallError("HTTP 400: bad schema", retryable=False, status=400)
    assert rejected_setting(other, request) is other
