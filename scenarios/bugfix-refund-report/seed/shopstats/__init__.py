"""Monthly figures for the shop's owners."""
