"""Mutation testing of the catalogue: `gridproof mutate` generates mutants of
the engine model (operators.py), decides the catalogue on each in a worker
of its own (run.py) and reports the ones no theorem refutes.

A generated mutant is the same kind of data as a hand-written one
(proofs/faults/: a `Patch`, in one function of models/, one piece of source
text replaced by another), applied the same way: the function's code is
swapped for the patched code while a `with` block runs, in the process that
reads the model, and restored after. models/ itself holds only engine
semantics.
"""
