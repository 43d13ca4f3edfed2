"""Real-browser tests: each starts a Streamlit server and drives Debian's Chromium (marker ``browser``, assigned
in tests/conftest.py by this folder; never run with -n)."""
