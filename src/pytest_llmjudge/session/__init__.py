"""The session layer: the Run, and what every pytest-facing module of the plugin shares.

``run.py`` is the Run, the one object whose hooks are a run's phases; it sits on top of the
feature modules and items and calls them (only ``plugin.py`` imports it). The rest of the
package is shared: the suite items (``suite/items.py``) and the feature modules
(calibration, pairwise, regression, report, batch) import from it, and it imports none of
them, only the plain engine below it (settings, judge policy, execution). That is the rule
``tests/unit/test_import_graph.py`` enforces (see ``docs/design.md``).

* ``run.py``: the Run (its docstring lists the phases in order);
* ``channel.py``: every key that crosses between an xdist controller and its workers;
* ``state.py``: the few stash keys items read (settings, scorer, JUnit recorder), ``is_enabled``;
* ``item_base.py``: the item base (failure type, failure rendering, recording) and the invalid-file item;
* ``suites.py``: each suite file built once per run, shared by the suite and regression collectors;
* ``no_judge.py``: the one "judge can't be called -> skip or fail" step for every item kind;
* ``collector.py``: the results collector, the one listener every report is built from.
"""
