"""The docs' generated blocks: tables and figures rendered from benchmarks/results/*.json."""
