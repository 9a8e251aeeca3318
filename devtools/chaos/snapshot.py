"""`python -m outcomes.devtools.chaos.snapshot DSN PREFIX OUT`: what ClickHouse holds for a
scenario's runs (`checker.read_snapshot`), pickled to OUT for `checker.snapshot_of`.

A module of its own so that the pickled classes name `outcomes.devtools.chaos.checker`, not
`__main__`."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from outcomes.devtools.chaos.checker import read_snapshot

if __name__ == "__main__":
    Path(sys.argv[3]).write_bytes(pickle.dumps(read_snapshot(sys.argv[1], sys.argv[2])))
