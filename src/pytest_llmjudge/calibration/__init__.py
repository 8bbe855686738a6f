"""Human-agreement gate and calibrated judges.

A *calibration set* is a YAML file with a top-level ``calibration:`` key: items in several
languages, each labelled by one or more native-speaker annotators on one or more rubric
metrics, plus the scores a judge gave them (recorded with the items, or asked of a live
judge). The plugin turns it into pytest items:

* ``agreement[<language>-<metric>]``: judge-vs-human weighted F1 against a threshold, with
  the diagnostics of METAL (Hada et al. 2024b, sec. 4.4, 5.1-5.2) and Hada et al. (2024a,
  sec. 3.4, 4.1-4.2);
* ``consistency[...]`` and ``sensitivity[...]``: the judge sanity checks of Hada et al.
  (2024a, sec. 3.5, 4.2.1, 4.3).

A suite's judge can name a calibration set (``judge.calibration``); its judge-scored items
in languages where that judge failed the gate then fail (or xfail/skip). Modules:

* ``schema.py``: the YAML format (pydantic, unknown keys are errors);
* ``build.py``: file -> validated :class:`~pytest_llmjudge.calibration.build.CalibrationSet`;
  ``plain_items.py``: items read without a pydantic model each; ``convert.py``: annotation tables -> a file;
* ``agreement_gate.py``: the statistics and the verdict of one language x metric gate (pure numpy);
* ``gate_computer.py``: the run's calibration sets, their judge scores (recorded, or live through the
  scorer) and their gate verdicts, computed once;
* ``correction.py``: per-language score correction fitted on the calibration set;
* ``sanity.py``: word shuffling and the consistency/sensitivity verdicts (pure);
* ``jury.py``: several live judges scored on one group x metric, and which to use;
* ``calibrated_judge.py``: :class:`CalibratedJudge`, the object behind ``llmjudge_calibrated_judge``;
* ``drift/``: the drift sentinel (is the certified judge still the one certified?);
* ``report.py``: failure messages and the terminal summary (text only);
* ``items.py``: pytest items, ``run_phase.py``: the calibration feature's part in the Run's phases (both import pytest).
"""
