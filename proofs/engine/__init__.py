"""Deciding one obligation: the claim language, its Z3 encoding, the solver with its refuters and
minimiser, and decision by enumeration."""
