"""Write the API's OpenAPI schema to docs/openapi.json: ``python -m http_api.openapi``.

The schema is committed so a team can read (and generate clients from) the API without
running it; tests/http_api/test_openapi.py fails when the committed file is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from http_api.app import create_app

COMMITTED = Path(__file__).resolve().parent.parent / "docs" / "openapi.json"


def schema() -> dict[str, Any]:
    # the schema does not depend on the store: no store is opened to build it
    return create_app("golden.duckdb").openapi()


def render() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0].startswith("-"):
        print("usage: python -m http_api.openapi [OUT.json]   (default: docs/openapi.json)", file=sys.stderr)
        return 0 if args[0] in ("-h", "--help") else 2
    out = Path(args[0]) if args else COMMITTED
    out.write_text(render(), encoding="utf-8")
    print(f"Wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
