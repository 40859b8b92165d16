"""harness: does a ranking branch really change a retrieval service, for better or worse?"""

__version__ = "0.1.0"
