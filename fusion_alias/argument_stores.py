"""A tensor the program stores into a list or dict argument: refused (Thunder 0.2.6 leaves its proxy there)."""

from __future__ import annotations

from thunder.core.proxies import TensorProxy


def proxy_left_in(args: tuple, kwargs: dict) -> str | None:
    """Where a list or dict among the arguments holds a ``TensorProxy`` after the call (``args[2][0]``),
    or None. Note: Thunder's interpreter runs a store into an argument's container on the real
    container while tracing, with the proxy it traced, and never on a cached call."""
    def walk(x, where: str, depth: int):
        if isinstance(x, TensorProxy):
            return where
        if depth > 4:
            return None
        items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, (list, tuple)) else ()
        for k, v in items:
            if (found := walk(v, f"{where}[{k!r}]", depth + 1)) is not None:
                return found
        return None

    for i, a in enumerate(args):
        if isinstance(a, (list, tuple, dict)) and (found := walk(a, f"args[{i}]", 0)) is not None:
            return found
    for k, v in kwargs.items():
        if isinstance(v, (list, tuple, dict)) and (found := walk(v, k, 0)) is not None:
            return found
    return None


def refuse_store(where: str) -> None:
    """Raise for a store into the argument at ``where`` (``args[1][0]``)."""
    raise NotImplementedError(
        f"fusion_alias: the function stores a tensor into its argument {where} (a list or dict it was "
        "given): not supported. Thunder 0.2.6 leaves a TensorProxy there instead of the tensor, and "
        "later calls do not run the store at all, so the caller would silently keep the stale entry "
        "(torch.optim's functional sgd with momentum_buffer_list=[None] loses its momentum). Return "
        "the tensor instead, or create it before the call")
