"""webapp: the shop's login and the auth cookies it sets."""
