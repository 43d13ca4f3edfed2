"""What one serving process holds: its store handles, the per-generation cache of whole-store
figures, and background jobs started from a page."""
