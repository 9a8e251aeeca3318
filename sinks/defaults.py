"""The sink's batching defaults, shared by its config, its CLI and `outcomes bench`.

A module of its own so that the CLI can show them without importing the Kafka client.
"""

from __future__ import annotations

# Records held (all partitions together) before a write, whatever the timer says.
BATCH_RECORDS = 5000
# The flush interval, which bounds event-to-ClickHouse latency from below: see
# docs/decisions.md, "The sink".
BATCH_SECONDS = 0.3
