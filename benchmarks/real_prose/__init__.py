"""Real prose: renders of public-domain novels, their flags, the judge's verdict and the gain."""
