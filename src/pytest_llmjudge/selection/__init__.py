"""Which of the collected items run; every item left out is reported as deselected, as ``-k`` does.

* ``plugin``: ``--llmjudge-language`` and the suites' tags as ``-m`` markers;
* ``sharding``: the stable hash that gives each case to one shard of ``--llmjudge-shard i/N``;
* ``sharding_plugin``: the hooks that keep one shard's items.

Not to be confused with ``execution.xdist_sharing``, which splits a run's judge calls (not its
items) between the pytest-xdist workers of one run.
"""
