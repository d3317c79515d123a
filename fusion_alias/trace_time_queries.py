"""Questions a program asks about its tensors and modes while traced, answered as eager answers them.

Note [a tensor's dtype is a torch.dtype]
----------------------------------------
Inside Thunder 0.2.6's trace, ``x.dtype`` is a Thunder dtype (``thunder.dtypes.float32``), which is not
equal to, nor is, ``torch.float32``: ``if x.dtype == torch.float16:``, ``x.dtype in (torch.float16,
torch.bfloat16)``, ``{torch.float32: ...}[x.dtype]`` and ``x.dtype is torch.bool`` all took the other
branch, silently (plain ``thunder.jit`` too; found through fuzz seed 20830 #127's neighbours in session 28)::

    def f(a):
        return a * 2 if a.dtype == torch.float32 else a * 3     # float32 a: eager 2a, Thunder 3a

Here ``x.dtype`` read by the program is the ``torch.dtype`` (``dtypes.to_torch_dtype``); every torch
function Thunder traces takes a ``torch.dtype`` where it takes a dtype (``torch.zeros(3, dtype=x.dtype)``,
``x.to(y.dtype)``), and ``torch.finfo(x.dtype)`` and ``x.dtype.is_floating_point`` now work as in eager.
(``x.device`` stays Thunder's device: the interpreter makes ``torch.device("cpu")`` one too, and they compare
equal; only ``str(x.device)`` differs from eager's: docs/limits.md.)
Code of fusion_alias's own that the interpreter runs (``x.max(0)`` runs ``min_max.torch_max`` there) still
reads Thunder's dtype: the innermost interpreted frame that is not Thunder's says whose code reads it.

Note [grad mode read inside the function]
-----------------------------------------
Thunder 0.2.6 traces ``with torch.no_grad():`` and ``torch.set_grad_enabled(b)`` by tracking the grad
mode in its compile data (``cd.is_grad_enabled``) without changing PyTorch's, and leaves
``torch.is_grad_enabled()`` to PyTorch: inside a ``no_grad`` block the call still answered the mode of
the caller, so a branch on it took the other path, silently (plain ``thunder.jit`` too; session 27
hand probe)::

    def f(x):
        with torch.no_grad():
            flag = torch.is_grad_enabled()      # eager False; Thunder True
        return x * 2 if flag else x * 3

Here the call is answered from the compile data: the caller's mode at the start of the trace (the
compile cache keys it), changed by the blocks traced so far. ``torch.is_inference_mode_enabled()`` is
not lent: ``torch.inference_mode`` inside the function is refused (inplace_lookasides.py).
"""

from __future__ import annotations

import os

import torch
import thunder
from thunder.core import dtypes
from thunder.core.compile_data import get_compile_data
from thunder.core.interpreter import get_interpreterruntimectx
from thunder.core.proxies import TensorProxy

import fusion_alias


def _is_grad_enabled() -> bool:
    cd = get_compile_data()
    return torch.is_grad_enabled() if cd is None else bool(cd.is_grad_enabled)


# Code the interpreter runs that expects Thunder's dtypes is fusion_alias's own (``min_max.torch_max`` runs
# there for ``x.max(0)``). Thunder's interpreter runs frames of its own between (attribute lookups): the
# reader is the innermost frame that is not Thunder's. torch's Python code gets the torch.dtype, as in eager.
_THUNDER = os.path.dirname(thunder.__file__) + os.sep
_FUSION_ALIAS = os.path.dirname(fusion_alias.__file__) + os.sep


def _read_by_fusion_alias() -> bool:
    try:
        frames = get_interpreterruntimectx().frame_stack
    except LookupError:  # (read outside an interpretation)
        return False
    for frame in reversed(frames):
        name = frame.code.co_filename
        if not name.startswith(_THUNDER):
            return name.startswith(_FUSION_ALIAS)
    return False


def _torch_dtype(proxy):
    return proxy.dtype if _read_by_fusion_alias() else dtypes.to_torch_dtype(proxy.dtype)


def register(executor) -> None:
    executor._lookasides[torch.is_grad_enabled] = _is_grad_enabled
    executor._lookasides[torch._C.is_grad_enabled] = _is_grad_enabled
    executor._lookasides[TensorProxy.dtype.fget] = _torch_dtype  # Note [a tensor's dtype is a torch.dtype]
