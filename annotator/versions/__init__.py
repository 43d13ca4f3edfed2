"""Freezing a version (signed or not), the conflicts that refuse a freeze and their fixes,
verifying, diffing and exporting."""
