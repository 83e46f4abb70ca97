"""The benchmarks: the catalogue's cost, the refutation race against Hypothesis and CrossHair,
`check` and mining timings."""
