"""Avro schemas (`*.avsc`): the source of truth for every record on the wire."""

from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parent
