"""Kafka adapters: topics, the stream worker and its two engines, replay over files.

`streams.sdk` is the producer SDK agent workers embed.
"""
