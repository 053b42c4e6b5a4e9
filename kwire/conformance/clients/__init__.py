"""One adapter per real Kafka client."""
