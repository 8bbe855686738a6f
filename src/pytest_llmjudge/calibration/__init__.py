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

=================  ==========================================================================
``schema``         the YAML format (pydantic, unknown keys are errors)
``build``          file -> validated :class:`~pytest_llmjudge.calibration.build.CalibrationSet`
``gate``           the statistics of one language x metric gate (pure numpy)
``correction``     per-language score correction fitted on the calibration set
``sanity``         word shuffling and the consistency/sensitivity verdicts (pure)
``store``          scores (recorded or live through the scoreboard) and cached verdicts per run
``judge``          :class:`CalibratedJudge`, the object behind ``llmjudge_calibrated_judge``
``report``         failure messages and the terminal summary (text only)
``items``          pytest items (imports pytest)
``plugin``         pytest hooks and the fixture (imports pytest)
=================  ==========================================================================
"""
