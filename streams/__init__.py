"""Kafka adapters: topics, the stream worker and its two engines, replay over files.

`outcomes.streams.sdk` is the producer SDK agent workers embed.
"""
