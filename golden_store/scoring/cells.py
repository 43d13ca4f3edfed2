"""How small a comparison cell may be before its verdict means nothing (METHODOLOGY §13.2,
§14.2). No imports: the command line reads these for its help text without loading numpy.

A comparison gives a verdict per metric overall, per stratum and per cohort. A cell of one
question, or of a few questions that all moved by the same amount, has a bootstrap
distribution with no spread: every resample repeats the observed mean and the bootstrap's
p reads 0, a "significant" result out of nothing. Two rules keep those cells honest:

* below :data:`MIN_CELL_N` paired questions a cell has no verdict ("too few"): 6 is the
  smallest n at which an exact two-sided sign-flip test can reach p < 0.05 (2 / 2^6), so
  below it no difference could be shown whatever the data;
* below :data:`SMALL_CELL_N` questions the cell's p comes from the sign-flip
  (randomization) test, exact over every sign pattern of its non-zero differences, as the
  bootstrap's p is only trustworthy with more questions than that.
"""

MIN_CELL_N = 6
SMALL_CELL_N = 30
