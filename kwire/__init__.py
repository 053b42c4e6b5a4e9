"""kwire: a Kafka wire toolkit.

Importing ``kwire`` loads nothing heavy; the codec, record layer and broker are
imported on first use so that ``kwire`` commands start fast.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
