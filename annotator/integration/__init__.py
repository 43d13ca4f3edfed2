"""Bringing outside data in (corpora, BEIR datasets, judgments from other tools, exported
datasets) and the serving process's background workers."""
