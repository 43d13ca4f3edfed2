"""Everything that spends tokens: the one LLM client and its cost estimates, the relevance
judge's prompt, judge calibration, grading the pool, the held-out guard every request
passes, and a local Messages-API stand-in."""
