"""Hand-written faults of the engine model (mutants), and the patching that applies them to its
code from outside."""
