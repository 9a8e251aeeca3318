"""Fault injection end to end: scenarios through the real worker and sink into ClickHouse,
and the checker that compares what ClickHouse holds with the inputs the broker
acknowledged (docs/reliability.md)."""
