"""``torch.is_grad_enabled()`` inside the compiled function, answered from the traced grad mode.

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

import torch
from thunder.core.compile_data import get_compile_data


def _is_grad_enabled() -> bool:
    cd = get_compile_data()
    return torch.is_grad_enabled() if cd is None else bool(cd.is_grad_enabled)


def register(executor) -> None:
    executor._lookasides[torch.is_grad_enabled] = _is_grad_enabled
    executor._lookasides[torch._C.is_grad_enabled] = _is_grad_enabled
