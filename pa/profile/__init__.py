"""Open a profile read-only, detect its format and version, and run its query set."""
