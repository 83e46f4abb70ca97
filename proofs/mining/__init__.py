"""Counterexample mining: the miner, the playback of mined cases, the views it mines over, and
the vLLM-style test writer."""
