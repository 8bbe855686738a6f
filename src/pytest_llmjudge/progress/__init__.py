"""Live progress of a run's judge calls.

* ``counters``: what one process counts (calls planned and done, cache hits, failures, tokens) and
  the one line of text made of them;
* ``run_phase``: the thread that draws that line on the terminal, through capture and pytest-xdist.
"""
