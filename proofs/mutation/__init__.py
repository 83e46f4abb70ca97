"""Mutants of the engine model, applied to its code from outside.

A mutant is a `Patch`: in one function of models/, one piece of source text
replaced by another. The hand-written mutants the manifest names
(`mutant:NAME`, handwritten.py) and the ones `gridproof mutate` generates
(operators.py) are the same kind of data, applied the same way (patch.py):
the function's code is swapped for the patched code while a `with` block
runs, in the process that reads the model, and restored after. models/
itself holds only engine semantics.
"""
