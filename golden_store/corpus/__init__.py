"""Documents as text, without the database: reading source files (``sources``), the quote
resolver, the persisted tantivy index, search, and placing passage runs on documents.

May import only ``golden_store.core`` (tests/test_layering.py checks it); the documents
table of the live store is ``golden_store.live.documents``.
"""
