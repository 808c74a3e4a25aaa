"""Routing monitoring alerts to chat channels."""
