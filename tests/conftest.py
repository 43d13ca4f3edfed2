"""Shared test setup: hypothesis profiles (HYPOTHESIS_PROFILE=deep for a long run)."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("default", max_examples=400, deadline=None)
settings.register_profile("deep", max_examples=20000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
