"""Ports for the extra Kafka stacks some tests start beside the dev stack.

A port is taken from below the kernel's ephemeral range
(`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999 by default): a port inside it can
be handed to any outgoing connection (the suite opens thousands to the dev broker)
between the moment it is checked here and the moment the broker binds it. That race
once stopped the secure stack with "Address already in use" on a port in 30000-40000.
"""

from __future__ import annotations

import random
from pathlib import Path

from outcomes.devtools.devstack import port_free

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_low() -> int:
    """The lowest port the kernel hands out to outgoing connections."""
    try:
        return int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default; other systems start higher


def free_base_port(count: int, lo: int, hi: int) -> int:
    """A base port in [lo, hi) with `count` broker and `count` controller ports (base + 100
    and up) free, all below the ephemeral range."""
    hi = min(hi, ephemeral_low() - 100 - count)
    assert lo < hi, f"no room for test ports below the ephemeral range ({lo}..{hi})"
    for _ in range(200):
        base = random.randrange(lo, hi)
        ports = [base + i for i in range(count)] + [base + 100 + i for i in range(count)]
        if all(port_free(port) for port in ports):
            return base
    raise AssertionError("no free ports found")
