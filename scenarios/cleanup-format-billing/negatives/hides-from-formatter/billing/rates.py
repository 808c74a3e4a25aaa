"""Left as it was written."""
RATE=0.2
