"""Conformance harness: real Kafka clients driven against a broker (kwire's, or a stand-in)."""
