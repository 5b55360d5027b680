"""Evidence: what error output shows about the environment it came from (error signatures, observations)."""
