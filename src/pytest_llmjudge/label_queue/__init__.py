"""``--llmjudge-label-queue``: which cases to send to annotators next.

* ``plan``: how many labels a group needs for an interval of a given width, and the seeded sample;
* ``run_phase``: gathers the scored cases of the human aggregates and writes the queue at the end.
"""
