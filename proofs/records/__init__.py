"""The records kept beside the catalogue (proofs/recorded/*.json) that each entry is held to, and
their readers; `gridproof record` writes them (proofs/run/recording.py)."""
