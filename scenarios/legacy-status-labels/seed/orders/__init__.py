"""Order states for the customer-facing status page."""
