"""The lab: benchmarks grouped by question (see benchmarks/README.md); run each as
``python -m benchmarks.GROUP.SCRIPT`` from the repository root."""
