"""Arguments eager takes only as tensors, given as numbers: eager's TypeError.

Note [an argument eager takes only as a tensor]
-----------------------------------------------
``torch.logical_and(x, other)`` and its relatives take ``other`` only as a tensor in eager (torch 2.9.1)::

    m.logical_and_(True)       # eager: TypeError: logical_and_(): argument 'other' (position 1) must be Tensor, not bool
    torch.logical_or(m, 0)     # the same for the function and the out-of-place method

Thunder 0.2.6 takes a number there, and fusion_alias's in-place form (``inplace_lookasides.py``) is that op and
a ``copy_``: the call returned a value where eager raises (hostile probe, session 25). Checked on the program as
traced, before any decomposition. ``hypot``, ``heaviside``, ``ldexp`` and ``arctan2`` raise while Thunder traces
them with a number already; ``nextafter`` and ``atan2`` raise eager's own error.
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy

# op name (as traced) -> the name eager gives its second argument
TENSOR_ONLY_SECOND = {
    name + suffix: "other"
    for name in ("logical_and", "logical_or", "logical_xor")
    for suffix in ("", "_")
}


def check_tensor_argument(b) -> None:
    """Raise eager's TypeError where ``b`` (a symbol of the program as traced, one of ``TENSOR_ONLY_SECOND``)
    has a number for an argument eager takes only as a tensor (module Note)."""
    arg = TENSOR_ONLY_SECOND[b.sym.name]
    value = b.args[1] if len(b.args) > 1 else b.kwargs.get(arg)
    if value is not None and not isinstance(value, TensorProxy):
        raise TypeError(
            f"fusion_alias: {b.sym.name}(): argument '{arg}' (position {2 if b.sym.name[-1] != '_' else 1}) must "
            f"be Tensor, not {type(getattr(value, 'value', value)).__name__} (eager PyTorch rejects this too)")
