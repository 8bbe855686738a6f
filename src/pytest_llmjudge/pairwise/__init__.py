"""Pairwise judging and Bradley-Terry rankings: the pairwise prompt, position-bias control, ranking files."""
