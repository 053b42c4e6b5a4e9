"""Data pipelines over captured traffic and Kafka logs: plain-Python readers, planners and checks.

``kwire.pipeline.spark`` holds the Spark adapters (the only place pyspark is imported);
everything else runs without Spark and is what the Spark tasks call.
"""
