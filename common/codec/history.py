"""Record every current record schema in `schemas/history/` (the store's old versions).

    python -m outcomes.common.codec.history          # add the current versions that are missing
    python -m outcomes.common.codec.history --check  # exit 1 if one is missing (what CI asks)

A file is `<full name>.<fingerprint>.json`: the self-contained schema, with the CRC-64
fingerprint of its canonical form (as the single-object encoding carries it) in hex.
Files are only ever added: a version once on main may still be on a topic.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from outcomes import schemas
from outcomes.common.codec.catalog import current_schemas, schema_fingerprint


def file_name(schema: Any) -> str:
    """`<full name>.<fingerprint hex>.json` for a self-contained record schema."""
    name = schemas.full_name(schema["name"], schema.get("namespace"))
    return f"{name}.{schema_fingerprint(schema).hex()}.json"


def missing(directory: Path = schemas.HISTORY_DIR) -> dict[str, Any]:
    """The current record schemas not yet recorded, by file name."""
    wanted = {file_name(r.schema): r.schema for r in current_schemas().values()}
    return {name: schema for name, schema in wanted.items() if not (directory / name).exists()}


def record(schema: Any, directory: Path = schemas.HISTORY_DIR) -> Path:
    """Write one version (idempotent: the same schema gives the same file and bytes)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(schema)
    path.write_text(json.dumps(schema, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    absent = missing()
    if "--check" in argv:
        for name in sorted(absent):
            print(f"schemas/history/{name}: not recorded (python -m outcomes.common.codec.history)")
        return 1 if absent else 0
    for schema in absent.values():
        print(f"recorded {record(schema).relative_to(schemas.SCHEMA_DIR.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
