"""The database engine: ``Store`` (DuckDB), the PostgreSQL backend and its SQL dialect, the
migrations (``schema``), the schema snapshot and store copy.

May import only ``golden_store.core`` (tests/test_layering.py checks it); the tables of each
workflow are in ``golden_store.live``.
"""
