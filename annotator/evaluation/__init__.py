"""Measuring systems: runs import, recorded evaluations and their provenance, what a comparison
pairs and whether two evaluations are comparable, power, transcripts and their sampling, the
home page's overview."""
