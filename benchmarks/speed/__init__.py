"""Speed and cost: real-time factors, throughput of each generator and verifier, memory."""
