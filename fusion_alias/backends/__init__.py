"""Backends that run a lowered region: ``reference`` (torch, any machine) and ``nvfuser`` (CUDA)."""
