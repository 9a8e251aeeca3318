"""Time-ordered UUIDs (UUIDv7, RFC 9562) for event ids.

Python 3.11 has no `uuid.uuid7`. Layout: 48-bit Unix milliseconds, version 7, a 12-bit
counter (random start each millisecond, +1 for each further id in the same millisecond,
so ids from one process sort in creation order), variant `10`, 62 random bits.
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_counter = 0
_COUNTER_MAX = 0xFFF


def uuid7() -> uuid.UUID:
    """A new UUIDv7, later than every UUIDv7 this process made before."""
    global _last_ms, _counter
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms > _last_ms:
            _last_ms = ms
            _counter = secrets.randbits(11)  # leave headroom for ids in the same ms
        else:  # same millisecond, or the clock stepped back: stay ordered
            _counter += 1
            if _counter > _COUNTER_MAX:
                _last_ms += 1
                _counter = 0
        ms, counter = _last_ms, _counter
    value = (ms & (2**48 - 1)) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62
    return uuid.UUID(int=value | secrets.randbits(62))


def uuid7_str() -> str:
    """A new UUIDv7 as its canonical 36-character string."""
    return str(uuid7())
