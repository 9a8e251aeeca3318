"""The producer SDK agent workers embed: typed events published as Avro to the input topics."""
