"""Running the catalogue: the manifest and the runner, the proof cache, the prove pipeline, the
result format and the record writer."""
