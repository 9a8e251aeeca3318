"""What the stream side and the sink side both need: settings, errors, runtime tuning,
the Avro codec."""
