"""The human loop: the label queue and the surface's channel, grading and undo,
double-annotation rounds and their assignment (grades and evidence quotes), agreement,
adjudication."""
