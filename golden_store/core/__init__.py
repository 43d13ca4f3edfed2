"""The rules at the bottom of golden_store: errors, the text-input rule (``textin``), the JSONL
reader, canonicalization, digests, store/version paths and the system-name rule.

Imports nothing else of golden_store (tests/test_layering.py checks it).
"""
