"""Backends that run a lowered region: ``reference`` (torch, any machine) and ``nvfuser`` (CUDA)."""

from __future__ import annotations

BACKENDS = ("auto", "nvfuser", "reference")


def nvfuser_usable() -> bool:
    from fusion_alias.backends import nvfuser as nvb

    return nvb.available()


def resolve_backend(backend: str, device_type: str | None = None) -> str:
    if backend == "auto":
        if device_type == "cuda" and nvfuser_usable():
            return "nvfuser"
        return "reference"
    return backend
