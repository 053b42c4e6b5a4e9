"""Fuzzing support: Hypothesis strategies built from the generated schemas."""
