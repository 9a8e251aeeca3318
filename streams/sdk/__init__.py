"""The SDKs: the producer agent workers embed (typed events published as Avro to the input
topics), the consumer downstream services use (notifications, revisions and claim
verdicts, committed after the handler returns), the webhook relay and its signature check."""
