"""Adapters from the pure core to Kafka, faust, Avro and the command line."""
