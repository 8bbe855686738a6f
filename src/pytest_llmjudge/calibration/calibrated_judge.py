"""A judge for Python tests that refuses languages it failed its calibration in.

:class:`CalibratedJudge` is the object behind the ``llmjudge_calibrated_judge`` fixture. It
is a :class:`~pytest_llmjudge.execution.judge.Judge` whose ``score`` and ``verdict`` first ask the
run's :class:`~pytest_llmjudge.calibration.gate_computer.GateComputer` whether this judge passed
the human-agreement gate of the calibration set for the requested language and rubric
(the same verdict, computed once per run, that gate items and calibrated suites use). When
it did not, no judge call is made: ``on_uncalibrated`` is called with the message "judge
<model> is not calibrated for <language>: F1 0.41 < 0.70 ..." (the fixture passes
``pytest.fail``); without a callback :class:`UncalibratedJudgeError` is raised.

With ``correction=True`` the returned score goes through the calibration set's
per-language correction (see :mod:`~pytest_llmjudge.calibration.correction`).

Degenerate cases: a language or rubric without calibration items is uncalibrated; an
invalid calibration file makes every call uncalibrated with the file's error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from pytest_llmjudge.calibration.gate_computer import CalibrationCheck, GateComputer
from pytest_llmjudge.errors import UncalibratedJudgeError
from pytest_llmjudge.execution.judge import Judge
from pytest_llmjudge.execution.scorer import Score, Scorer
from pytest_llmjudge.judges.rubrics import Rubric
from pytest_llmjudge.suite.model import Case
from pytest_llmjudge.suite.schema import JudgeConfig

__all__ = ["CalibratedJudge", "UncalibratedJudgeError"]


class CalibratedJudge(Judge):
    """A :class:`Judge` bound to a calibration set."""

    def __init__(
        self,
        board: Scorer,
        store: GateComputer,
        calibration: Path | str,
        config: JudgeConfig | None = None,
        *,
        task: str | None = None,
        correction: bool = False,
        on_uncalibrated: Callable[[str], NoReturn] | None = None,
    ) -> None:
        base = config or JudgeConfig()
        path = Path(calibration).resolve()
        super().__init__(board, base.model_copy(update={"calibration": str(path), "correction": correction}), task=task)
        self.store = store
        self.calibration = path
        self._on_uncalibrated = on_uncalibrated

    def check(self, language: str, rubric: str | Rubric = "linguistic_acceptability") -> CalibrationCheck:
        """The calibration verdict for ``language`` and ``rubric`` (no judge call)."""
        name = rubric.name if isinstance(rubric, Rubric) else self._rubric(rubric).name
        return self.store.check(self._suite, language, name)

    def require_calibrated(self, language: str, rubric: str | Rubric = "linguistic_acceptability") -> None:
        verdict = self.check(language, rubric)
        if verdict.message is None:
            return
        if self._on_uncalibrated is not None:
            self._on_uncalibrated(verdict.message)
        raise UncalibratedJudgeError(verdict.message)

    def verdict(
        self,
        text: str,
        *,
        rubric: str | Rubric = "linguistic_acceptability",
        language: str = "en",
        input: str | None = None,
        reference: str | None = None,
        context: Sequence[str] = (),
    ) -> Score:
        self.require_calibrated(language, rubric)
        result = super().verdict(
            text, rubric=rubric, language=language, input=input, reference=reference, context=context
        )
        if not self._suite.judge.correction:
            return result
        case = Case(suite=self._suite.name, id="<python>", language=language, output=text)
        return self.store.adjust(self._suite, case, result)
