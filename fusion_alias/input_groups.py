"""Which trace inputs may share memory: from the actual call's tensors, or from what Thunder says."""

from __future__ import annotations

import torch
import thunder
from thunder.core.proxies import TensorProxy


def _input_groups(trace, ctx, tensor_inputs):
    """Groups of trace-input names that may overlap, and name -> actual tensor (if known)."""
    names = [p.name for p in tensor_inputs]
    if ctx.has_call:
        from thunder.core.compile_data import _compile_data
        from fusion_alias.components import overlap_groups

        cd, cs = _compile_data.get()
        inps, _ = cs.last_prologue(*ctx.args, **ctx.kwargs)
        ctx.saw_inputs(inps)  # the guard keys the program by what it reads (api.py)
        actual = {}
        for p, x in zip(trace.args, inps):
            if isinstance(p, TensorProxy) and isinstance(x, torch.Tensor):
                actual[p.name] = x
        tensors = [actual[n] for n in names if n in actual]
        known = [n for n in names if n in actual]
        groups = [[known[i] for i in g] for g in overlap_groups(tensors)]
        missing = [n for n in names if n not in actual]
        if missing:  # could not match an input: it may alias anything
            groups.append(names)
        return groups, actual
    try:
        alias_indices = thunder._get_cache_info().get("alias_tensor_indices")
    except LookupError:  # not inside a thunder.jit compilation
        alias_indices = None
    if alias_indices == "":
        return [], {}
    # Thunder saw aliased arguments (or did not tell): any two inputs may overlap.
    return ([names] if len(names) > 1 else []), {}
