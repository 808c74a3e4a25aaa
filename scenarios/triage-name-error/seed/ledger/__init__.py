"""A tiny double-entry ledger kept in a JSON file."""
