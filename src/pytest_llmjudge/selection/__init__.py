"""Which of the collected items run; every item left out is reported as deselected, as ``-k`` does.

* ``run_phase``: ``--llmjudge-language`` and the suites' tags as ``-m`` markers (called by the Run);
* ``sharding``: the stable hash that gives each case to one shard of ``--llmjudge-shard i/N``;
* ``shard_phase``: keeps one shard's items (called by the Run).

Not to be confused with ``execution.xdist_sharing``, which splits a run's judge calls (not its
items) between the pytest-xdist workers of one run.
"""
