"""Collection settings of the example suites.

``baselines/`` holds the suites that produced the committed baseline files (and a second
candidate): they are run explicitly, as docs/baselines.md shows, not by the main command
``pytest --llmjudge example_suites``.
"""

collect_ignore = ["baselines"]
