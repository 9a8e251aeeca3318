"""Dev tooling: the local Kafka stack, demo, load generator, workloads, end-to-end bench,
worker harness, sample outputs."""
