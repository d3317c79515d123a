"""Eager's layout of the result of an op fusion_alias does not fuse (one the torch executor runs).

Note [an opaque op's result keeps its operand's layout]
-------------------------------------------------------
Session 21. ``layouts._Layouts`` took the result of every op outside the op table (``torch.flip``,
``torch.rot90``, ``Tensor.index_fill``, ...) for a fresh contiguous tensor. Eager makes many of them
with ``empty_like`` of an operand (preserve_format), so they keep a transposed operand's stride order.
Worked example (``x`` a contiguous 3x4 input)::

    c = x.transpose(0, 1)            # strides (1, 4)
    t0 = c.flip(0)                   # eager: strides (1, 4), new memory
    t0.transpose(0, 1).reshape(-1).zero_()
    return t0                        # eager: zeros (the reshape is a view of t0)

Taken for contiguous, ``t0.transpose(0, 1)`` had strides (1, 3), the reshape was decided a copy and the
write was lost: ``t0`` came back with ``x``'s values flipped (session-21 hand probe, the neighbour of fuzz
seed 20759 #8's gather). The torch executor runs such an op as the torch function it names
(``b.sym.module``, ``b.sym.name``: ``torch.flip``), so its layout is that function's on meta tensors of
its operands' layouts: eager's layout from eager's operand layouts, and the layout at run time from the
layouts at run time (the op runs on torch there too). Where the function is not found, or raises on
meta tensors, or gives another shape, the result is taken for contiguous, as before.

Session 22: an opaque op that may return a view (``x.conj()``, ``x.adjoint()``, ``x.as_strided(...)``) had
no layout at all ("any layout"), so a reshape of it in a program that writes was refused ("cannot tell
whether reshape ... is a view or a copy"). Its layout is now the same function's on the meta layout (a meta
``conj`` of a real tensor is that tensor, ``adjoint`` transposes it): ``a.t().conj().reshape(-1)`` is
eager's copy, ``a.conj().reshape(-1)`` eager's view, and ``(a.adjoint() * 1).view(-1)`` raises eager's
error; where the function is not told, the layout stays unknown (refused as before).
"""

from __future__ import annotations

import torch
from thunder.core.dtypes import to_torch_dtype
from thunder.core.proxies import TensorProxy

#: ``_Layouts._meta_arg``'s answer for an operand of unknown layout
UNKNOWN = object()
_MODULES = (torch, torch.Tensor, torch.nn.functional, torch.linalg, torch.special)


def _torch_function(b):
    """The torch function a torch-executor bound symbol runs, or None."""
    module = getattr(b.sym, "module", None)
    if module not in _MODULES:
        return None
    fn = getattr(module, b.sym.name, None)
    return fn if callable(fn) else None


def _known(meta_arg, a):
    """``meta_arg(a)``; of a tensor of unknown layout, a contiguous one. ``_Layouts`` follows only an opaque op's
    first tensor operand (an unknown one marks the result a guess); the others (an index made by ``torch.tensor``)
    are not looked up, and were taken for contiguous before session 21 too, as the whole result was."""
    t = meta_arg(a)
    if t is UNKNOWN and isinstance(a, TensorProxy):
        try:
            return torch.empty(tuple(a.shape), dtype=to_torch_dtype(a.dtype), device="meta")
        except Exception:  # noqa: BLE001 - a shape or dtype meta tensors do not take
            return UNKNOWN
    return t


def opaque_result_layout(b, p: TensorProxy, meta_arg) -> torch.Tensor | None:
    """Eager's layout (a meta tensor) of ``p``, an output of the opaque op ``b``, from its operands' layouts
    (``meta_arg``: a proxy -> its meta tensor, or ``UNKNOWN``); None where it cannot be told that way."""
    fn = _torch_function(b)
    if fn is None:
        return None
    args = [_known(meta_arg, a) for a in b.args]
    kwargs = {k: _known(meta_arg, v) for k, v in b.kwargs.items() if k != "device"}
    if any(a is UNKNOWN for a in (*args, *kwargs.values())):
        return None
    if not any(isinstance(a, torch.Tensor) for a in args):
        return None
    try:
        out = fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 - a function meta tensors do not take: not told
        return None
    if isinstance(out, (tuple, list)):
        out = next((o for o in out if isinstance(o, torch.Tensor) and tuple(o.shape) == tuple(p.shape)), None)
    if not isinstance(out, torch.Tensor) or out.device.type != "meta" or tuple(out.shape) != tuple(p.shape):
        return None
    if out.dtype != to_torch_dtype(p.dtype):
        out = torch.empty_strided(out.shape, out.stride(), dtype=to_torch_dtype(p.dtype), device="meta")
    return out
