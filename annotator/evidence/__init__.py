"""Building the golden set's content: evidence quotes resolved to spans, question editing and
drafting, nuggets."""
