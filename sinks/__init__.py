"""Adapters from output records to ClickHouse."""
