"""The nvFuser backend (CUDA): the region's definition on a real ``nvfuser.FusionDefinition``."""

from __future__ import annotations

import functools

import torch


@functools.cache
def _nvfuser():
    try:
        import nvfuser  # noqa: F401

        return nvfuser
    except Exception:
        return None


def missing() -> str | None:
    """Why the nvFuser backend cannot run here, or None when it can."""
    if not torch.cuda.is_available():
        return "no CUDA device is available (torch.cuda.is_available() is False)"
    if _nvfuser() is None:
        return "nvFuser is not installed (pip install -e '.[nvfuser]', Python 3.12 wheels only)"
    return None


def available() -> bool:
    return missing() is None


def require() -> None:
    why = missing()
    if why is not None:
        raise RuntimeError(f"fusion_alias: backend='nvfuser' cannot run: {why}")


class NvFuserFusion:
    """Placeholder replaced by the real wrapper (issue 3)."""

    def __init__(self, spec):
        require()
        raise NotImplementedError("nvFuser backend not implemented yet")
