"""authsvc: logins, refresh-token rotation and the auth cookies of the shop's web app."""
