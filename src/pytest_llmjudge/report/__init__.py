"""Reports of a ``--llmjudge`` run: terminal summary, JSON report, HTML report.

* :mod:`~pytest_llmjudge.report.document`: the typed report document (``ReportDocument``)
  every renderer reads, and its generated JSON schema;
* :mod:`~pytest_llmjudge.report.assemble`: builds that document from the run's typed item
  records (``records.py``), prices and the judge-call accounting;
* :mod:`~pytest_llmjudge.report.terminal`: the ``llmjudge summary`` section;
* :mod:`~pytest_llmjudge.report.json_report`: ``--llmjudge-report=json:PATH``;
* :mod:`~pytest_llmjudge.report.html` and :mod:`~pytest_llmjudge.report.charts`:
  ``--llmjudge-report=html:PATH``, self-contained, inline SVG charts;
* :mod:`~pytest_llmjudge.report.run_phase`: the pytest hooks (options, collection of suite
  metadata, writing at session end on the controller).

Only ``run_phase`` imports pytest. See ``docs/reports.md``.
"""
