"""Input size limits (SPEC section 2), configurable, with the SPEC's defaults."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Largest accepted input: larger input is a dead letter with reason `too_large`."""

    max_event_bytes: int = 1024 * 1024
    max_string_bytes: int = 64 * 1024
    max_list_items: int = 10_000
