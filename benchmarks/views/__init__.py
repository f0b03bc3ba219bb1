"""HTML pages of the lab: pools, campaigns, runs."""
