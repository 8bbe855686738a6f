"""How long the reports take for a large run, and how big the HTML report is.

Synthetic results of 10,000 case items, as the typed records the plugin's items emit
(``pytest_llmjudge.records``): 10 languages; a live-judge suite with three METAL rubrics
(linguistic acceptability and task quality on 0/1/2, hallucinations 0/1) and a
reference-metric suite (chrF++ 0-100); one justification of 150-400 characters per judged
case in the case's script; about 12% of the items failing; per-language mean and pass-rate
aggregates; agreement-gate records for 10 languages x 3 rubrics shaped like the calibration
plugin's (confusion matrices and class distributions computed with ``pytest_llmjudge.stats``);
regression records per suite x metric x language; one Bradley-Terry ranking of six systems.

Timed: building the report document from the records, writing the JSON report and writing
the HTML report (what the plugin does at the end of a run); generating the data is not.

Every case carries its input, output and reference (about 100-400 characters each, in its
language's script), and with the regression records every case's baseline score and output
(every fifth answered differently), as a run with ``--llmjudge-baseline`` has.

Run: ``python benchmarks/report_speed.py [N_CASES] [--all-failing] [--browser]``
(``--all-failing``: the worst case for the page size, every case failed with a justification
three times as long; ``--browser``: also open the page in headless Chromium and print the
time from navigation start until the page's script has drawn the case table,
``browser_render_ms``, as the page itself measures it). Targets: under 2 s and under 10 MB.
The last line is ``seconds=<time> html_mb=<size>``.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_llmjudge.execution.runner import RunnerStats
from pytest_llmjudge.records import (
    AggregateRecord,
    AggregateRow,
    CaseRecord,
    Confusion,
    GateRecord,
    Interval,
    ItemRecord,
    LeaderboardRecord,
    PairedCase,
    RegressionRecord,
    Skew,
    Standing,
    Threshold,
)
from pytest_llmjudge.report.assemble import RunInputs, build_document
from pytest_llmjudge.report.document import JudgeInfo, RunInfo, SuiteInfo
from pytest_llmjudge.report.html import write_html
from pytest_llmjudge.report.json_report import write_json
from pytest_llmjudge.stats.agreement import agreement_report
from pytest_llmjudge.stats.distribution import class_distribution

LANGUAGES = ("ar", "bn", "de", "fr", "hi", "ja", "ru", "sw", "ta", "zh")
WORDS = {
    "ar": "النص واضح ومفهوم لكن بعض العبارات غير طبيعية",
    "bn": "উত্তরটি স্পষ্ট তবে কিছু বাক্য অস্বাভাবিক শোনায়",
    "de": "Die Antwort ist klar, aber einige Formulierungen klingen unnatürlich",
    "fr": "La réponse est claire mais certaines tournures sonnent peu naturelles",
    "hi": "उत्तर स्पष्ट है लेकिन कुछ वाक्य अस्वाभाविक लगते हैं",
    "ja": "回答は明確ですが、いくつかの表現が不自然に聞こえます",
    "ru": "Ответ ясен, но некоторые формулировки звучат неестественно",
    "sw": "Jibu liko wazi lakini baadhi ya sentensi zinasikika si za kawaida",
    "ta": "பதில் தெளிவாக உள்ளது ஆனால் சில வாக்கியங்கள் இயல்பாக இல்லை",
    "zh": "回答清楚，但有些表达听起来不自然",
}
RUBRICS = {"linguistic_acceptability": (0, 1, 2), "task_quality": (0, 1, 2), "hallucinations": (0, 1)}
JUDGE = "openai:gpt-4o-mini"


def _threshold(metric: str) -> Threshold:
    if metric == "hallucinations":
        return Threshold(op="<=", value=0)
    if metric == "chrf++":
        return Threshold(op=">=", value=50)
    return Threshold(op=">=", value=1)


def _holds(metric: str, score: float) -> bool:
    threshold = _threshold(metric)
    assert isinstance(threshold.value, (int, float))
    return bool(score <= threshold.value if threshold.op == "<=" else score >= threshold.value)


def _cases(n_cases: int, rng: np.random.Generator) -> list[CaseRecord]:
    records: list[CaseRecord] = []
    metrics = (*RUBRICS, "chrf++")
    for index in range(n_cases):
        metric = metrics[index % len(metrics)]
        language = LANGUAGES[(index // len(metrics)) % len(LANGUAGES)]
        case_id = f"{language}-{index // (len(metrics) * len(LANGUAGES)):05d}"
        suite = "qa-metrics" if metric == "chrf++" else "release-gate"
        if metric == "chrf++":
            score: float = round(float(np.clip(rng.normal(72, 14), 0, 100)), 2)
        elif metric == "hallucinations":
            score = int(rng.random() < 0.08)
        else:
            score = int(rng.choice(3, p=(0.04, 0.16, 0.80)))
        unscored = rng.random() < 0.004
        passed = not unscored and _holds(metric, score)
        words = WORDS[language]
        # What was judged: a question, an answer and a reference in the case's script (~100-400 characters each).
        question = f"{case_id}? " + " ".join([words] * 2)
        answer = f"{case_id}: " + " ".join([words] * (2 + (index // (len(metrics) * len(LANGUAGES))) % 5))
        justification = None
        if metric != "chrf++":
            repeat = 1 + int(rng.integers(1, 5))
            justification = f"{metric}: " + " ".join([words] * repeat)
        records.append(
            CaseRecord(
                suite=suite,
                suite_path=f"suites/{suite}.yaml",
                case=case_id,
                language=language,
                metric=metric,
                threshold=_threshold(metric),
                score=None if unscored else score,
                source="reference" if metric == "chrf++" else "judge",
                judge=None if metric == "chrf++" else JUDGE,
                cached=None if metric == "chrf++" else bool(rng.random() < 0.5),
                justification=justification,
                unscored_reason="judge reply could not be parsed after 2 re-asks" if unscored else None,
                higher_is_better=metric != "hallucinations",
                passed=passed,
                input=question,
                output=answer,
                reference=" ".join([words] * 3),
                nodeid=f"suites/{suite}.yaml::{case_id}[{metric}]",
                outcome="passed" if passed else "failed",
            )
        )
    return records


def _aggregates(cases: list[CaseRecord]) -> list[AggregateRecord]:
    from pytest_llmjudge.suite.aggregate import mean_ci

    records = []
    by_key: dict[tuple[str, str], list[CaseRecord]] = {}
    for case in cases:
        by_key.setdefault((case.suite, case.metric), []).append(case)
    for (suite, metric), items in sorted(by_key.items()):
        floor = {"chrf++": 65.0, "hallucinations": 0.9}.get(metric, 1.7)
        label = "pass_rate(hallucinations <= 0)" if metric == "hallucinations" else f"mean({metric})"
        rows = []
        for language in (*LANGUAGES, "all"):
            chosen = [c for c in items if language in ("all", c.language)]
            scored = [float(c.score) for c in chosen if isinstance(c.score, (int, float))]
            low: float | None
            high: float | None
            if metric == "hallucinations":
                value = sum(c.passed for c in chosen) / len(chosen)
                low = high = None
            else:
                value = float(np.mean(scored))
                interval = mean_ci(scored)
                low, high = interval if interval is not None else (None, None)
            n_unscored = len(chosen) - len(scored)
            problem = f"{n_unscored} of {len(chosen)} case(s) unscored in {language}" if n_unscored > 3 else None
            rows.append(
                AggregateRow(
                    language=language,
                    n_scored=len(scored),
                    n_unscored=n_unscored,
                    value=value,
                    ci_low=low,
                    ci_high=high,
                    threshold=Threshold(op=">=", value=floor),
                    passed=problem is None and value >= floor,
                    problem=problem,
                )
            )
        for row in rows:
            records.append(
                AggregateRecord(
                    suite=suite,
                    suite_path=f"suites/{suite}.yaml",
                    aggregate=label,
                    metric=metric,
                    language=row.language,
                    passed=row.passed,
                    rows=rows,
                    nodeid=f"suites/{suite}.yaml::{label}[{row.language}]",
                    outcome="passed" if row.passed else "failed",
                )
            )
    return records


def _gates(rng: np.random.Generator) -> list[GateRecord]:
    records = []
    for position, language in enumerate(LANGUAGES):
        for metric, scale in RUBRICS.items():
            n = 300
            shares = (0.12, 0.23, 0.65) if len(scale) == 3 else (0.75, 0.25)
            human = rng.choice(len(scale), size=n, p=shares)
            accurate = 0.88 - 0.3 * position / (len(LANGUAGES) - 1)
            lenient = np.clip(human + (1 if metric != "hallucinations" else -1), 0, len(scale) - 1)
            judge = np.where(rng.random(n) < accurate, human, lenient)
            levels = rng.choice(["full", "partial", "none"], size=n, p=(0.6, 0.3, 0.1))
            report = agreement_report(human, judge, list(scale))
            distribution = class_distribution(human, judge, levels, list(scale))
            f1 = report.weighted_f1
            ceiling = float(np.clip(0.9 - 0.1 * rng.random(), 0, 1))
            threshold = 0.85
            records.append(
                GateRecord(
                    suite="calibration",
                    calibration="calibration",
                    calibration_path="calibration/metal.yaml",
                    judge=JUDGE,
                    language=language,
                    group=language,
                    metric=metric,
                    labels=list(scale),
                    higher_is_better=metric != "hallucinations",
                    f1=f1,
                    macro_f1=report.macro_f1,
                    ci=Interval(low=max(f1 - 0.05, 0.0), high=min(f1 + 0.05, 1.0), confidence=0.95),
                    threshold=threshold,
                    compared="f1",
                    n=n,
                    n_items=n,
                    n_unscored=0,
                    ceiling=ceiling,
                    pa=report.percentage_agreement,
                    kappa=report.cohen_kappa,
                    fleiss=0.7,
                    confusion=Confusion(labels=list(scale), matrix=report.confusion.tolist()),
                    distribution=distribution.to_dict(),
                    skew=Skew(
                        judge_mean=distribution.overall.judge_mean,
                        human_mean=distribution.overall.human_mean,
                        skew=distribution.overall.skew,
                    ),
                    passed=f1 >= threshold,
                    nodeid=f"calibration/metal.yaml::gate[{metric}][{language}]",
                    outcome="passed" if f1 >= threshold else "failed",
                )
            )
    return records


def _paired(cases: list[CaseRecord], suite: str, metric: str, language: str) -> list[PairedCase]:
    """A regression record's per-case pairs: every fifth case answered differently in the baseline."""
    paired = []
    for index, case in enumerate(c for c in cases if (c.suite, c.metric, c.language) == (suite, metric, language)):
        changed = index % 5 == 0
        score = case.score
        before = score
        if changed and isinstance(score, (int, float)):
            before = score - 1 if score >= 1 else score + 1
        output = f"(baseline) {case.output}" if changed else case.output
        paired.append(PairedCase(case=case.case, baseline=before, candidate=case.score, baseline_output=output))
    return paired


def _regressions(rng: np.random.Generator, cases: list[CaseRecord]) -> list[RegressionRecord]:
    records = []
    for suite, metrics in (("release-gate", tuple(RUBRICS)), ("qa-metrics", ("chrf++",))):
        for metric in metrics:
            spread = 6.0 if metric == "chrf++" else 0.1
            for language in LANGUAGES:
                delta = float(rng.normal(0, spread / 2))
                half = spread * 0.6
                low, high = delta - half, delta + half
                margin = spread / 4
                if delta < -margin and high < -margin:
                    gate, verdict = "fail", "regressed"
                elif delta < -margin:
                    gate, verdict = "warn", "drop not significant"
                elif low > 0:
                    gate, verdict = "pass", "improved"
                else:
                    gate, verdict = "pass", "no significant change"
                records.append(
                    RegressionRecord(
                        suite=suite,
                        suite_path=f"suites/{suite}.yaml",
                        metric=metric,
                        language=language,
                        group_by=["language"],
                        baseline="baseline.json",
                        baseline_suite=suite,
                        n=100,
                        higher_is_better=metric != "hallucinations",
                        mean_baseline=1.8,
                        mean_candidate=1.8 + delta,
                        mean_difference=delta,
                        ci_low=low,
                        ci_high=high,
                        confidence=0.95,
                        p_value=float(rng.random()),
                        method="paired bootstrap",
                        margin=margin,
                        gate=gate,
                        verdict=verdict,
                        passed=gate != "fail",
                        nodeid=f"suites/{suite}.yaml::regression({metric})[{language}]",
                        outcome="failed" if gate == "fail" else "passed",
                        cases=_paired(cases, suite, metric, language),
                    )
                )
    return records


def _ranking(rng: np.random.Generator) -> LeaderboardRecord:
    names = ["candidate", "baseline", "gpt-4o", "llama-3-70b", "aya-23", "mistral-large"]
    strengths = {name: float(rng.normal(0, 0.6)) for name in names}
    order = sorted(names, key=lambda name: -strengths[name])
    systems = [
        Standing(
            name=name,
            rank=order.index(name) + 1,
            strength=strengths[name],
            ci_low=strengths[name] - 0.2,
            ci_high=strengths[name] + 0.2,
            rank_ci=[max(order.index(name), 1), min(order.index(name) + 2, len(names))],
            wins=40.0,
            losses=40.0,
            ties=20.0,
            games=100,
        )
        for name in names
    ]
    return LeaderboardRecord(
        suite="arena",
        metric="judge [all]",
        ranking="arena",
        ranking_path="arena.yaml",
        source="judge",
        language="all",
        judge=JUDGE,
        systems=systems,
        n_cases=100,
        n_battles=1500,
        n_unjudged=0,
        passed=True,
        nodeid="arena.yaml::ranking[judge][all]",
        outcome="passed",
    )


def synthetic_inputs(n_cases: int = 10_000, seed: int = 0) -> RunInputs:
    """A run of ``n_cases`` case items plus aggregates, gates, regressions and a ranking."""
    rng = np.random.default_rng(seed)
    cases = _cases(n_cases, rng)
    records: list[ItemRecord] = [*cases, *_aggregates(cases), *_gates(rng), *_regressions(rng, cases), _ranking(rng)]
    judged = sum(1 for c in cases if c.source == "judge" and not c.cached)
    suite_judge = JudgeInfo(
        provider="openai",
        model="gpt-4o-mini",
        label=JUDGE,
        temperature=0.0,
        seed=7,
        mode="single",
        instructions="detailed",
        repeats=1,
    )
    suites = [
        SuiteInfo(
            name="release-gate",
            path="suites/release-gate.yaml",
            languages=list(LANGUAGES),
            n_cases=n_cases * 3 // 4,
            live_judge=True,
            judge=suite_judge,
            metrics={name: "rubric" for name in RUBRICS},
            rubrics={name: hashlib.sha256(name.encode()).hexdigest()[:12] for name in sorted(RUBRICS)},
            scales={name: [min(scale), max(scale)] for name, scale in RUBRICS.items()},
        ),
        SuiteInfo(
            name="qa-metrics",
            path="suites/qa-metrics.yaml",
            languages=list(LANGUAGES),
            n_cases=n_cases // 4,
            live_judge=False,
            judge=suite_judge.model_copy(update={"seed": None}),
            metrics={"chrf++": "reference"},
        ),
    ]
    stats = RunnerStats(
        submitted=judged,
        finished=judged,
        cache_hits=n_cases * 3 // 4 - judged,
        provider_calls=judged + 12,
        retries=12,
        unscored=30,
        input_tokens=judged * 410,
        output_tokens=judged * 60,
    )
    run = RunInfo(
        timestamp="2025-01-01T00:00:00+00:00",
        duration_s=123.4,
        plugin_version="synthetic",
        pytest_version="-",
        python_version="-",
        pytest_args=["--llmjudge", "suites", "--llmjudge-report=html:report.html"],
        exit_status=1,
        cache_mode="use",
    )
    return RunInputs(records=records, suites=suites, stats=stats, run=run)


def make_all_fail(inputs: RunInputs) -> RunInputs:
    """The worst case for the HTML size: every case fails, justifications three times as long."""
    records = [
        record.model_copy(
            update={
                "outcome": "failed",
                "passed": False,
                "justification": (record.justification or "no justification") * 3,
            }
        )
        if isinstance(record, CaseRecord)
        else record
        for record in inputs.records
    ]
    return RunInputs(records=records, suites=inputs.suites, stats=inputs.stats, run=inputs.run)


def _browser_render_ms(page: Path, scratch: Path) -> int | None:
    """The page's own ``data-render-ms`` after headless Chromium loaded it (None without chromium)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    command += [f"--user-data-dir={scratch / 'profile'}", "--dump-dom", page.as_uri()]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False).stdout
    found = re.search(r'data-render-ms="(\d+)"', dom)
    return int(found.group(1)) if found and 'data-ready="1"' in dom else None


def main(argv: list[str]) -> int:
    all_failing = "--all-failing" in argv
    browser = "--browser" in argv
    numbers = [a for a in argv if not a.startswith("--")]
    n_cases = int(numbers[0]) if numbers else 10_000
    inputs = synthetic_inputs(n_cases)
    if all_failing:
        inputs = make_all_fail(inputs)
    with tempfile.TemporaryDirectory() as directory:
        json_path, html_path = Path(directory) / "report.json", Path(directory) / "report.html"
        start = time.perf_counter()
        document = build_document(inputs)
        built = time.perf_counter()
        write_json(document, json_path)
        wrote_json = time.perf_counter()
        write_html(document, html_path)
        end = time.perf_counter()
        html_mb = html_path.stat().st_size / 1e6
        json_mb = json_path.stat().st_size / 1e6
        render_ms = _browser_render_ms(html_path, Path(directory)) if browser else None
    print(f"cases={n_cases} records={len(inputs.records)}")
    print(f"document_s={built - start:.3f} json_s={wrote_json - built:.3f} html_s={end - wrote_json:.3f}")
    print(f"json_mb={json_mb:.2f}")
    if browser:
        print(f"browser_render_ms={render_ms}")
    print(f"seconds={end - start:.3f} html_mb={html_mb:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
