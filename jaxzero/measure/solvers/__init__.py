"""Exact solvers used to label positions and to play perfectly."""
