"""The live store's tables, one module per workflow (every SQL statement of the app outside
the engine itself).

May import ``golden_store.db``, ``corpus``, ``scoring`` and ``core``; never ``versions`` or
``freezing`` (tests/test_layering.py checks it).
"""
