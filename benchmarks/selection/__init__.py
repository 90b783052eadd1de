"""Selection and gain: does best-of-N pick what an independent judge prefers, and at what cost."""
