"""Data written with any record schema main has held still decodes (schemas/history/).

Without a Schema Registry, the single-object encoding names its writer schema only by
fingerprint, so a consumer can resolve an older record only if it knows that version:
the codec's store loads every file of schemas/history/. A schema change that is not
recorded there fails `test_every_current_version_is_recorded`, with the command that
records it.
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from outcomes import schemas
from outcomes.common.codec import Codec, CodecError, history, strip_logical_types
from outcomes.common.codec.catalog import current_schemas, schema_fingerprint
from tests.codec_support import sample
from tests.test_schemas_compat import _avro_value

VERSIONS = schemas.history()
SOE_MAGIC = b"\xc3\x01"


def framed(schema: Any, value: Any) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(strip_logical_types(schema)), value)
    return SOE_MAGIC + schema_fingerprint(schema) + buffer.getvalue()


def test_every_current_version_is_recorded() -> None:
    assert history.main(["--check"]) == 0, "run: python -m outcomes.common.codec.history"


def test_history_holds_the_older_versions_of_a_changed_record() -> None:
    """ClaimVerdict has had four versions on main (v1, settlements, formulations,
    needs_review)."""
    names = [schemas.full_name(v["name"], v.get("namespace")) for v in VERSIONS]
    assert names.count("io.outcomes.v1.ClaimVerdict") == 4
    assert len({schema_fingerprint(v) for v in VERSIONS}) == len(VERSIONS)


@pytest.mark.parametrize("full", [True, False], ids=["full", "minimal"])
@pytest.mark.parametrize("version", VERSIONS, ids=history.file_name)
def test_data_written_with_each_version_decodes(version: Any, full: bool) -> None:
    name = schemas.full_name(version["name"], version.get("namespace"))
    assert (schemas.HISTORY_DIR / history.file_name(version)).exists()
    record = current_schemas()[name]
    value = sample(version, full=full)
    if record.is_event:
        value["type"] = record.kind  # the one field whose value the codec checks
    decoded = Codec().decode(framed(version, _avro_value(value, version)))
    assert decoded.schema_name == name
    assert decoded.kind == record.kind


def test_a_version_missing_from_the_history_does_not_decode() -> None:
    """The failure the history prevents: a version no file records (here a newer one,
    with one more optional field) has a fingerprint the store does not know."""
    current = current_schemas()["io.outcomes.v1.ClaimVerdict"].schema
    newer = {
        **current,
        "fields": [
            *current["fields"],
            {"name": "extra", "type": ["null", "string"], "default": None},
        ],
    }
    value = _avro_value(sample(newer, full=True), newer)
    with pytest.raises(CodecError) as raised:
        Codec().decode(framed(newer, value))
    assert raised.value.reason == "unknown_schema"
