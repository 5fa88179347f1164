"""pa's version: one definition, read by the summary, the report and `pa --version`."""

__version__ = "0.1.0"
