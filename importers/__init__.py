"""Recorded agent runs turned into canonical events: one importer per trace format."""
