"""The drift sentinel: is the judge behind a certified name still the one the gate certified?

A provider can change the model behind a name (``gpt-4o`` is an alias; a deployment is
redeployed; a proxy routes elsewhere) and a cached agreement-gate verdict survives that
swap. The sentinel watches two things for a suite whose judge has ``judge.drift`` and a
``judge.calibration``, per language x metric the calibration covers:

1. **Served identity.** Every reply names the model that served it (``model``) and, on
   OpenAI, the backend configuration (``system_fingerprint``); with the rubric's hash
   (``Rubric.version``) that is the *served identity* (``execution.scorer.served_identity``).
   The first run whose gate passes *certifies* the identity that served an uncached sample
   and stores it in ``<calibration stem>.certified/<group>.<metric>.<judge hash>.json`` next to
   the calibration file (commit it, like a regression baseline; ``--llmjudge-recertify``
   replaces it). Later runs compare: another served model, fingerprint or rubric version is
   a change, which fails or warns (``on_change``). Suite scores served by another identity
   than the certified one are likewise flagged (``served_check``), so a cache entry made by
   another model is not reused silently.
2. **Agreement.** Each run re-asks, without the cache (a second runner whose cache is off),
   a seeded sample of ``sample`` calibration items of the language (the same items every
   run: ``numpy.random.default_rng(seed)`` choosing without replacement) and computes the
   weighted F1 (METAL, Hada et al. 2024b, sec. 4.4; ``stats.agreement.weighted_f1``) of the
   fresh scores against the human aggregate, with a percentile bootstrap interval
   (``stats.resampling.bootstrap_weighted_f1_ci``, 1000 resamples, seed 0). The check fails
   when ``before - after > tolerance``, ``before`` being the F1 stored at certification on the
   same items. The point estimates decide (both are on the same items, so item sampling
   cancels; what varies is the judge's own sampling); the interval is shown so a reader can
   tell a small sample's noise from a real drop (``benchmarks/drift_sentinel.py`` measures
   the false-alarm rate and power).

Degenerate cases: no scored item in the fresh sample is a failure (nothing was measured); a
certified file for other sample items (the calibration set or ``sample`` changed) is a
failure asking to re-certify; a sample larger than the group takes every item; a certified
file that is not valid is a :class:`~pytest_llmjudge.errors.SuiteError` naming it and the field.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.execution.cache import JudgeCache
from pytest_llmjudge.execution.runner import CallOutcome, JudgeRunner
from pytest_llmjudge.execution.scorer import Score, Scorer
from pytest_llmjudge.judges.base import JudgeProvider, LazyProvider
from pytest_llmjudge.stats.agreement import weighted_f1
from pytest_llmjudge.stats.resampling import bootstrap_weighted_f1_ci
from pytest_llmjudge.suite.model import Case, Suite
from pytest_llmjudge.suite.schema import DriftConfig, JudgeConfig
from pytest_llmjudge.util.atomic import write_atomic

__all__ = [
    "Agreement",
    "Certified",
    "DriftVerdict",
    "FreshJudge",
    "certified_path",
    "decide",
    "drift_sample",
    "identity_changes",
    "identity_text",
    "merge_identities",
    "read_certified",
    "sample_agreement",
    "write_certified",
]

_IDENTITY_FIELDS = ("served_model", "system_fingerprint", "rubric_version")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def identity_text(identity: Mapping[str, str] | None) -> str:
    """``model (fingerprint), rubric <hash>``, or ``unknown``."""
    if not identity:
        return "unknown"
    text = identity.get("served_model") or "?"
    if identity.get("system_fingerprint"):
        text += f" ({identity['system_fingerprint']})"
    return text + f", rubric {identity.get('rubric_version', '?')}"


def merge_identities(identities: Sequence[Mapping[str, str] | None]) -> dict[str, str] | None:
    """The identities of several scores as one: each field's distinct values, sorted, comma-separated."""
    seen: dict[str, set[str]] = {}
    for identity in identities:
        for name, value in (identity or {}).items():
            seen.setdefault(name, set()).update(part for part in value.split(", ") if part)
    return {name: ", ".join(sorted(values)) for name, values in sorted(seen.items())} or None


def identity_changes(certified: Mapping[str, str] | None, served: Mapping[str, str] | None) -> list[str]:
    """What differs between two identities, e.g. ``served_model gpt-4o-2024-08-06 -> gpt-4o-2024-11-20``."""
    changes = []
    for name in _IDENTITY_FIELDS:
        old = (certified or {}).get(name, "")
        new = (served or {}).get(name, "")
        if old != new:
            changes.append(f"{name} {old or 'none'} -> {new or 'none'}")
    return changes


@dataclass(frozen=True)
class Agreement:
    """Weighted F1 of a judge against the human aggregate on ``n`` scored items, with its interval."""

    f1: float
    low: float
    high: float
    n: int

    def text(self) -> str:
        return f"{self.f1:.3f} (95% CI {self.low:.3f}-{self.high:.3f}, n={self.n})"


def sample_agreement(human: Sequence[int], judge: Sequence[float], scale: Sequence[int]) -> Agreement | None:
    """Agreement on the items the judge scored (NaN: unscored); None when it scored none."""
    pairs = [(int(h), int(j)) for h, j in zip(human, judge, strict=True) if not math.isnan(j)]
    if not pairs:
        return None
    truth = np.array([h for h, _ in pairs])
    scores = np.array([j for _, j in pairs])
    f1 = weighted_f1(truth, scores, labels=list(scale))
    ci = bootstrap_weighted_f1_ci(truth, scores, labels=list(scale), n_resamples=1000, rng=0)
    return Agreement(float(f1), float(ci.low), float(ci.high), len(pairs))


def drift_sample(size: int, config: DriftConfig) -> list[int]:
    """The indices (ascending) of the ``config.sample`` items of ``size`` the sentinel re-asks."""
    if size <= config.sample:
        return list(range(size))
    chosen = np.random.default_rng(config.seed).choice(size, size=config.sample, replace=False)
    return sorted(int(i) for i in chosen)


@dataclass(frozen=True)
class Certified:
    """What a certification stored: the identity, and the agreement on the sample items."""

    judge: str
    group: str
    metric: str
    identity: dict[str, str]
    agreement: Agreement
    items: tuple[str, ...]
    certified_at: str

    def to_json(self) -> str:
        data = {
            "format": 1,
            "judge": self.judge,
            "group": self.group,
            "metric": self.metric,
            "identity": self.identity,
            "agreement": {
                "weighted_f1": self.agreement.f1,
                "ci_low": self.agreement.low,
                "ci_high": self.agreement.high,
                "n": self.agreement.n,
            },
            "items": list(self.items),
            "certified_at": self.certified_at,
        }
        return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def certified_path(calibration: Path, judge: str, group: str, metric: str) -> Path:
    """Where the certified identity of ``judge`` in ``group`` x ``metric`` is kept, next to the calibration file."""
    digest = hashlib.sha256(judge.encode("utf-8")).hexdigest()[:10]
    name = f"{_UNSAFE.sub('_', group)}.{_UNSAFE.sub('_', metric)}.{digest}.json"
    return calibration.parent / f"{calibration.stem}.certified" / name


def read_certified(path: Path) -> Certified | None:
    """The certification stored at ``path``; None when there is none."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    field = "the file"
    try:
        data = json.loads(raw)
        field = "identity"
        identity = {str(k): str(v) for k, v in data["identity"].items()}
        field = "agreement"
        agreement = data["agreement"]
        parsed = Agreement(
            float(agreement["weighted_f1"]),
            float(agreement["ci_low"]),
            float(agreement["ci_high"]),
            int(agreement["n"]),
        )
        field = "items"
        items = tuple(str(item) for item in data["items"])
        field = "judge"
        return Certified(
            judge=str(data["judge"]),
            group=str(data["group"]),
            metric=str(data["metric"]),
            identity=identity,
            agreement=parsed,
            items=items,
            certified_at=str(data.get("certified_at", "")),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SuiteError(
            f"certified judge identity: {field} is not valid ({exc.__class__.__name__}: {exc}); "
            "delete the file or re-certify with --llmjudge-recertify",
            path=path,
        ) from None


def write_certified(path: Path, certified: Certified) -> None:
    write_atomic(path, certified.to_json(), fsync=True, private=False)


def now_text() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class DriftVerdict:
    """One language x metric's sentinel result: ``problem`` fails, ``warning`` warns."""

    problem: str | None
    warning: str | None


def decide(
    config: DriftConfig,
    where: str,
    certified: Certified,
    before_identity: Mapping[str, str] | None,
    served: Mapping[str, str] | None,
    gate_served: Mapping[str, str] | None,
    after: Agreement | None,
) -> DriftVerdict:
    """The verdict against a certification (see the module docstring); ``where`` names judge and language."""
    problems: list[str] = []
    if after is None:
        return DriftVerdict(f"{where}: the judge scored none of the {len(certified.items)} sample items", None)
    before = certified.agreement
    if before.f1 - after.f1 > config.tolerance + 1e-12:
        problems.append(
            f"agreement with the humans dropped from {before.text()} to {after.text()}, "
            f"more than the tolerance {config.tolerance:g}"
        )
    identity_notes = []
    changed = identity_changes(before_identity, served)
    if changed:
        identity_notes.append(
            f"served identity changed: certified {identity_text(before_identity)}, now {identity_text(served)} "
            f"({'; '.join(changed)}); agreement before {before.text()}, after {after.text()}"
        )
    cached_changes = identity_changes(before_identity, gate_served)
    if cached_changes and gate_served:
        identity_notes.append(
            f"the gate's (cached) scores were served by {identity_text(gate_served)}, not the certified "
            f"{identity_text(before_identity)}: refresh them with --llmjudge-cache=refresh"
        )
    if identity_notes and config.on_change == "fail":
        problems.extend(identity_notes)
    warning = f"{where}: " + "; ".join(identity_notes) if identity_notes and config.on_change == "warn" else None
    return DriftVerdict(f"{where}: " + "; ".join(problems) if problems else None, warning)


class FreshJudge:
    """Asks a judge without the cache: a runner of its own whose cache is off (replies are not stored).

    The sentinel observes; storing its replies would change what the run's cached scores are.
    Providers are built on the runner's own event loop (an SDK client belongs to one loop).
    """

    def __init__(self, board: Scorer) -> None:
        self.board = board
        self._runner: JudgeRunner | None = None
        self._providers: dict[tuple[str, str | None, str | None], JudgeProvider] = {}
        self._lock = threading.Lock()

    def _get_runner(self) -> JudgeRunner:
        if self._runner is None:
            settings = self.board.settings
            self._runner = JudgeRunner(
                JudgeCache(None, "off"),
                concurrency=settings.concurrency,
                max_retries=settings.max_retries,
                backoff_base=settings.retry_backoff,
                secrets=self.board.runner.secrets,
                spend=self.board.spend,
            )
        return self._runner

    def _provider(self, judge: JudgeConfig) -> JudgeProvider:
        settings = self.board.judge_settings(judge)
        key = (settings.provider, settings.base_url, judge.api_key_env)
        provider = self._providers.get(key)
        if provider is None:
            factory = self.board.registry.provider(settings.provider)
            api_key = factory.api_key(judge.api_key_env)
            base_url, timeout = settings.base_url, self.board.settings.timeout
            provider = LazyProvider(settings.provider, lambda: factory.create(api_key, base_url, timeout))
            runner = self._get_runner()
            runner.add_secret(api_key)
            runner.track_provider(provider)
            self._providers[key] = provider
        return provider

    def scores(self, suite: Suite, cases: Sequence[Case], metric: str) -> list[Score]:
        """``metric``'s score of each case, asked now, uncached (one sample each)."""
        from pytest_llmjudge.execution.scorer import verdict_score

        rubric = suite.rubrics[metric]
        label = self.board.judge_settings(suite.judge).label
        futures: list[concurrent.futures.Future[CallOutcome]] = []
        with self._lock:
            provider = self._provider(suite.judge)
            runner = self._get_runner()
            for case in cases:
                group = next(g for g in self.board.rubric_groups(suite, case) if metric in {r.name for r in g})
                request = self.board.judge_request(suite, case, group, 0, case.output or "")
                futures.append(runner.submit_judgment(provider, request, group, max_reasks=suite.judge.max_reasks))
        return [verdict_score(rubric, label, [future.result()]) for future in futures]

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()


def score_array(scores: Sequence[Score]) -> list[float]:
    """Scores as numbers, NaN where unscored."""
    return [float(s.value) if s.scored and isinstance(s.value, (int, float)) else math.nan for s in scores]


def certification(
    judge: str, group: str, metric: str, identity: Mapping[str, str], agreement: Agreement, items: Sequence[str]
) -> Certified:
    return Certified(judge, group, metric, dict(identity), agreement, tuple(items), now_text())


def as_dict(value: Any) -> dict[str, str] | None:
    return dict(value) if value else None
