"""Spreading maintenance jobs over the days of a week."""
