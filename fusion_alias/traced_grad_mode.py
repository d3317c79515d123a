"""The grad mode at the point of the program being traced.

Thunder 0.2.6 traces ``with torch.no_grad():`` and ``torch.set_grad_enabled(b)`` inside the function by
changing the grad mode of its compile data (``cd.is_grad_enabled``), not PyTorch's: while a program is
traced, that is the mode its next op runs under in eager (trace_time_queries.py, Note [grad mode read
inside the function]). Outside a trace (no compile data) it is PyTorch's own mode.

A module of its own because lookasides on both sides of an import cycle ask it (trace_time_queries.py
lends ``torch.is_grad_enabled``; bool_reductions.py and out_arguments.py refuse what eager's autograd
refuses): it imports nothing of fusion_alias.
"""

from __future__ import annotations

import torch
from thunder.core.compile_data import get_compile_data


def traced_grad_enabled() -> bool:
    """Whether grad mode is on where the program is being traced (module docstring)."""
    cd = get_compile_data()
    return torch.is_grad_enabled() if cd is None else bool(cd.is_grad_enabled)
