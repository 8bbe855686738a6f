"""The session layer: what every pytest-facing module of the plugin shares, and nothing feature-specific.

The core plugin (``plugin.py``), the suite items (``suite_items.py``) and the feature plugins
(calibration, pairwise, regression, report, batch) import from here; this package imports
none of them, only the plain engine below it (settings, judge policy, execution). That is
the rule ``tests/unit/test_import_graph.py`` enforces (see ``docs/design.md``).

* ``state.py``: the run's stash keys, ``is_enabled`` and the file-kind sniffing;
* ``items.py``: the item base (failure type, failure rendering, recording) and the invalid-file item;
* ``suites.py``: each suite file built once per run, shared by the suite and regression collectors;
* ``no_judge.py``: the one "judge can't be called -> skip or fail" step for every item kind;
* ``collector.py``: the results collector (item records, xdist accounting) and its key.
"""
