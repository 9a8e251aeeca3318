"""The pure domain core: events in, outcome accounts out. No I/O, no clock, no randomness."""
