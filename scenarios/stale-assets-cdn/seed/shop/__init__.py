"""shop: the storefront's pages and static assets."""
