"""Release gating against a stored baseline: baseline files, paired comparisons, regression items."""
