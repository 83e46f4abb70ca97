"""How gridproof runs as a process: worker pools, Ctrl-C and SIGTERM, the Z3 watchdog, atomic writes."""
