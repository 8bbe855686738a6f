"""The regression family's statistics against their references and hand counts.

* :mod:`pytest_llmjudge.stats.signflip` against ``scipy.stats.permutation_test``
  (``permutation_type="samples"``, every sign vector), ``scipy.stats.binomtest`` (equal
  magnitudes: the sign test) and counts done by hand;
* :mod:`pytest_llmjudge.stats.multiplicity` against ``statsmodels.stats.multitest.multipletests``;
* :mod:`pytest_llmjudge.stats.power` against ``statsmodels.stats.power.NormalIndPower``;
* :mod:`pytest_llmjudge.regression.verdict` on hand-made records.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, permutation_test

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.records import RegressionRecord
from pytest_llmjudge.regression.verdict import release_verdict
from pytest_llmjudge.stats.multiplicity import adjust, per_item_level, tarone
from pytest_llmjudge.stats.paired import paired_permutation_test
from pytest_llmjudge.stats.power import cases_needed, minimum_detectable_effect, minimum_pairs
from pytest_llmjudge.stats.signflip import drop_upper_bound, min_achievable_p, sign_flip_test, sign_flip_tests


def _scipy_p(d: np.ndarray, alternative: str) -> float:
    result = permutation_test(
        (d,),
        lambda x, axis: np.mean(x, axis=axis),
        permutation_type="samples",
        alternative=alternative,
        n_resamples=np.inf,
    )
    return float(result.pvalue)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alternative", ["less", "greater"])
def test_exact_sign_flip_equals_scipy_permutation_test(seed: int, alternative: str) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 13))
    d = rng.integers(-2, 3, size=n).astype(float) if seed % 2 else rng.normal(-0.3, 1, size=n).round(2)
    ours = sign_flip_test(d, alternative=alternative)  # type: ignore[arg-type]
    assert ours.exact
    assert ours.p_value == pytest.approx(_scipy_p(d, alternative), abs=1e-12)


def test_hand_counts_and_the_issue_cases() -> None:
    # d = (-1, -2, +1), T = -2: the 8 sign vectors give -2, 0, 2, -4, 4, -2, 0, 2;
    # three are <= -2 -> 3/8, seven are >= -2 -> 7/8.
    assert sign_flip_test([-1.0, -2.0, 1.0]).p_value == 3 / 8
    assert sign_flip_test([-1.0, -2.0, 1.0], alternative="greater").p_value == 7 / 8
    assert sign_flip_test([-1.0, -1.0]).p_value == 0.25  # 2 of 2 single-point drops (bootstrap: 0.0005)
    four = sign_flip_test([-1.0] * 4 + [0.0] * 16)  # 4 drops among 20 ties (bootstrap: 0.027)
    assert four.p_value == 0.0625 and four.nonzero == 4 and four.min_p == 0.0625
    assert sign_flip_test([-1.0] * 10).p_value == 2**-10
    zero = sign_flip_test([0.0] * 5)
    assert zero.p_value == 1.0 and zero.min_p == 1.0 and zero.nonzero == 0


@pytest.mark.parametrize(("down", "up", "ties"), [(2, 0, 0), (4, 0, 16), (10, 0, 0), (7, 3, 5), (12, 6, 2)])
def test_equal_magnitudes_are_the_sign_test(down: int, up: int, ties: int) -> None:
    d = np.array([-1.0] * down + [1.0] * up + [0.0] * ties)
    m = down + up
    assert sign_flip_test(d).p_value == pytest.approx(binomtest(down, m, 0.5, alternative="greater").pvalue)
    assert sign_flip_test(d, alternative="greater").p_value == pytest.approx(
        binomtest(down, m, 0.5, alternative="less").pvalue
    )


def test_beyond_the_exact_limit_off_the_lattice_is_monte_carlo_with_add_one() -> None:
    # Magnitudes 1 and sqrt(2) share no unit: 30 non-tied pairs, 2^30 sign vectors, Monte Carlo.
    d = np.r_[-np.ones(20), np.full(10, math.sqrt(2.0))]
    result = sign_flip_test(d, resamples=4000, seed=1)
    assert not result.exact and result.resamples == 4000 and result.min_p == pytest.approx(1 / 4001)
    hits = round(result.p_value * 4001) - 1
    assert result.p_value == (hits + 1) / 4001, "p = (b + 1) / (B + 1)"
    long_run = paired_permutation_test(d, np.zeros(d.size), resamples=200_000, seed=9, alternative="less")
    assert abs(result.p_value - long_run.p_value) < 4 * math.sqrt(long_run.p_value / 4000) + 1 / 4001
    assert sign_flip_test(d, resamples=4000, seed=1).p_value == result.p_value, "seeded"


def test_beyond_the_exact_limit_on_the_lattice_is_exact_at_every_n() -> None:
    # Equal magnitudes: the sign test, exactly, at 30 and 400 non-tied pairs.
    for down, up in ((20, 10), (230, 170)):
        d = np.r_[-np.ones(down), np.ones(up)]
        result = sign_flip_test(d)
        assert result.exact and result.min_p == 2.0 ** -(down + up)
        assert result.p_value == pytest.approx(binomtest(down, down + up, 0.5, alternative="greater").pvalue, rel=1e-9)
        assert "lattice" in result.detail


@pytest.mark.parametrize("shift", [0.0, 0.2, 0.5])
def test_the_lattice_distribution_equals_enumerating_every_sign_vector(shift: float) -> None:
    rng = np.random.default_rng(11)
    for index in range(4):
        d = rng.integers(-2, 3, size=14).astype(float)
        for alternative in ("less", "greater"):
            enumerated = sign_flip_test(d, alternative=alternative, shift=shift)
            lattice = sign_flip_test(d, alternative=alternative, shift=shift, exact_limit=0)
            assert lattice.exact and lattice.resamples == 0
            assert lattice.p_value == pytest.approx(enumerated.p_value, rel=1e-10, abs=1e-15)
        if index == 0:  # scipy lists every sign vector: once per shift is enough
            assert lattice.p_value == pytest.approx(_scipy_p(d + shift, "greater"), rel=1e-10)


def test_the_lattice_p_agrees_with_a_long_monte_carlo_at_100_pairs() -> None:
    rng = np.random.default_rng(5)
    d = rng.choice([-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0], size=100)
    exact, _ = sign_flip_tests(d)
    nonzero = d[d != 0]
    monte_carlo = paired_permutation_test(
        nonzero, np.zeros(nonzero.size), resamples=200_000, seed=2, alternative="less"
    )
    assert exact.exact and exact.resamples == 0
    assert abs(exact.p_value - monte_carlo.p_value) < 4 * math.sqrt(exact.p_value / 200_000) + 1e-5


def test_min_achievable_p_and_minimum_pairs() -> None:
    assert min_achievable_p(4) == 0.0625 and min_achievable_p(5) == 1 / 32 and min_achievable_p(0) == 1.0
    assert min_achievable_p(40, resamples=999) == 1 / 1000
    assert minimum_pairs(0.05) == 5, "an exact one-sided test at 5% needs 5 non-tied pairs"
    assert minimum_pairs(0.05 / 24) == 9


def test_the_drop_bound_inverts_the_non_inferiority_test() -> None:
    rng = np.random.default_rng(4)
    d = rng.integers(-2, 3, size=14).astype(float)
    level = 0.05
    upper = drop_upper_bound(d, level)
    assert math.isfinite(upper)
    below = sign_flip_test(d, alternative="greater", shift=upper - 1e-4).p_value
    above = sign_flip_test(d, alternative="greater", shift=upper + 1e-6).p_value
    assert below > level >= above
    assert drop_upper_bound([-1.0, -1.0], 0.05) == math.inf, "two pairs rule nothing out"
    with pytest.raises(StatisticsError):
        drop_upper_bound(d, 1.5)


@pytest.mark.parametrize(("ours", "theirs"), [("holm", "holm"), ("bh", "fdr_bh"), ("bonferroni", "bonferroni")])
def test_adjustments_equal_statsmodels(ours: str, theirs: str) -> None:
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    rng = np.random.default_rng(7)
    for k in (1, 2, 5, 24):
        p = rng.uniform(size=k) ** 3
        p[: k // 3] = p[0]  # ties
        reject, adjusted, _, _ = multipletests(p, alpha=0.05, method=theirs)
        assert adjust(list(p), ours) == pytest.approx(list(adjusted), abs=1e-15)
        assert [a <= 0.05 for a in adjust(list(p), ours)] == list(reject)


def test_tarone_counts_only_what_could_be_significant() -> None:
    # Smallest possible p-values of 7, 5, 4, 1 and 0 changed pairs.
    min_p = [2**-7, 2**-5, 2**-4, 0.5, 1.0]
    # K = 1: two are <= 0.05 (2^-7, 2^-5); K = 2: only 2^-7 is <= 0.025 -> 1 <= 2.
    assert tarone(min_p, 0.05, "holm") == (2, [True, False, False, False, False])
    assert tarone(min_p, 0.05, "none") == (5, [True] * 5)
    assert tarone([2**-10] * 24, 0.05, "holm") == (24, [True] * 24)
    # The correction counts K hypotheses even when fewer are testable.
    assert adjust([0.01, 0.02], "holm", size=3) == pytest.approx([0.03, 0.04])
    assert adjust([0.01, 0.02], "bh", size=3) == pytest.approx([0.03, 0.03])
    with pytest.raises(StatisticsError):
        adjust([0.1, 0.2], "holm", size=1)


def test_holm_by_hand_and_degenerate_families() -> None:
    # p = (0.01, 0.04, 0.03): sorted 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 0.04)
    assert adjust([0.01, 0.04, 0.03], "holm") == pytest.approx([0.03, 0.06, 0.06])
    assert adjust([0.01, 0.04, 0.03], "none") == [0.01, 0.04, 0.03]
    assert adjust([], "holm") == []
    assert per_item_level(0.05, 24, "holm") == pytest.approx(0.05 / 24)
    assert per_item_level(0.05, 24, "none") == 0.05
    with pytest.raises(StatisticsError):
        adjust([0.5], "sidak")
    with pytest.raises(StatisticsError):
        adjust([1.5], "holm")


def test_power_equals_statsmodels_normal_power() -> None:
    power_module = pytest.importorskip("statsmodels.stats.power")
    solver = power_module.NormalIndPower()
    sigma, level = 0.6, 0.05 / 24
    for n in (20, 100, 400):
        mde = minimum_detectable_effect(sigma, n, level)
        effect = solver.solve_power(nobs1=n, alpha=level, power=0.8, ratio=0, alternative="larger")
        assert mde == pytest.approx(effect * sigma, rel=1e-4)  # statsmodels solves numerically
    needed = cases_needed(sigma, 0.2, level)
    reference = solver.solve_power(effect_size=0.2 / sigma, alpha=level, power=0.8, ratio=0, alternative="larger")
    assert needed == math.ceil(reference - 1e-6)
    assert cases_needed(0.0, 0.2, 0.05) == 5, "no variance: the exact test's floor"
    assert cases_needed(sigma, 0.0, 0.05) is None and minimum_detectable_effect(None, 20, 0.05) == math.inf
    assert minimum_detectable_effect(sigma, 4, 0.05) == math.inf, "4 pairs can't reach 5%"


def _record(language: str, gate: str, passed: bool = True, **extra: object) -> RegressionRecord:
    fields: dict[str, object] = {
        "suite": "s",
        "suite_path": "s.yaml",
        "metric": "m",
        "language": language,
        "group_by": ["language"],
        "baseline": "prod",
        "baseline_suite": "s",
        "gate": gate,
        "verdict": gate,
        "n": 20,
        "higher_is_better": True,
        "method": "permutation",
        "passed": passed,
        "correction": "holm",
        "family": "run",
        "alpha": 0.05,
        **extra,
    }
    return RegressionRecord(**fields)  # type: ignore[arg-type]


def test_release_verdict_counts_and_names_what_failed() -> None:
    assert release_verdict([]) is None
    records = [
        _record("hi", "fail", passed=False),
        _record("bn", "warn"),
        _record("ta", "undecided"),
        _record("te", "pass"),
    ]
    verdict = release_verdict(records)
    assert verdict is not None and not verdict.passed
    assert verdict.text == (
        "release verdict: FAIL: 4 comparison(s) in 1 family (run), Holm at alpha 0.05; 1 failed: s m [hi]; "
        "1 inconclusive; 1 too few cases to decide"
    )
    ok = release_verdict([_record("te", "pass"), _record("bn", "warn")])
    assert ok is not None and ok.passed and ok.status == "pass" and ok.failed == [] and "none failed" in ok.text
    unsure = release_verdict([_record("te", "pass"), _record("ta", "undecided")])
    assert unsure is not None and unsure.passed and unsure.status == "undecided"
    assert unsure.text.startswith("release verdict: UNDECIDED: 2 comparison(s)"), "never a plain PASS"
    strict = release_verdict([_record("bn", "warn", passed=False, fail_on="warn")])
    assert strict is not None and not strict.passed, "fail_on: warn fails the release"
    per_suite = release_verdict(
        [_record("hi", "pass", family="suite"), _record("hi", "pass", family="suite", suite_path="t.yaml")]
    )
    assert per_suite is not None and per_suite.families == 2


def test_bootstrap_non_inferiority_p_is_the_shift_method_upper_tail() -> None:
    from pytest_llmjudge.stats.paired import paired_bootstrap

    rng = np.random.default_rng(5)
    base = rng.integers(0, 3, 30).astype(float)
    cand = np.clip(base + rng.integers(-1, 2, 30), 0, 2)
    result = paired_bootstrap(cand, base, resamples=999, seed=1)
    d, margin = result.mean_difference, 0.2
    by_hand = (1 + np.count_nonzero(result.distribution - d - margin >= d - 1e-12)) / 1000
    assert result.p_value_non_inferior(margin) == pytest.approx(by_hand)
    assert paired_bootstrap([1.0], [2.0]).p_value_non_inferior(0.5) == 1.0, "one pair: no evidence"
