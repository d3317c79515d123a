"""What a jitted module asks of each call: the tensors it holds now (rebound between calls), and whether its
parameters ask for gradients (``api.py``)."""

from __future__ import annotations

import weakref

import torch


def follow_rebound_state(thunder_module) -> None:
    """Point the ThunderModule's tables of parameters and buffers at the tensors its module holds now, for the
    names the module rebound since the last call (Note [state rebound between calls]).

    Note [state rebound between calls]
    ----------------------------------
    Thunder 0.2.6's ThunderModule reads parameters and buffers from tables of its own, filled when it is
    made; a tensor the user rebinds on the module afterwards (``m.kv = torch.zeros(...)`` between two calls,
    ``m.w = nn.Parameter(...)``, ``model.load_state_dict(..., assign=True)``) is never read: the next call
    computes with the old one (plain ``thunder.jit`` too; session 16 hand probe, a neighbour of the
    ``modules`` generator's rebinding). Before each call the module's current tensors are compared, by
    identity, with those seen at the previous call; a name whose tensor changed gets the new one in the
    table (a table entry no rebinding touched, such as one a Thunder transform replaced, is left alone).
    The guard then keys the call by the new tensor's aliasing, as any input's."""
    model = thunder_module._model
    seen = thunder_module.__dict__.setdefault("_fusion_alias_seen_state", {})
    tables = (("b", thunder_module._overrides_buffers, model.named_buffers(remove_duplicate=False)),
              ("p", thunder_module._overrides_parameters, model.named_parameters(remove_duplicate=False)))
    for kind, table, named in tables:
        for name, t in named:
            key = (kind, name)
            ref = seen.get(key)
            before = ref() if ref is not None else None  # (weak: a rebound tensor is not kept alive here)
            if before is t:
                continue
            if before is not None and name in table and table[name] is before:
                table[name] = t
            seen[key] = weakref.ref(t)


def trains_parameters(fn) -> bool:
    """Note [a module's parameters ask for gradients before compiling]: a module called with gradients on whose
    parameters require grad computes gradients whatever its arguments; compiled without, the fusion pass saw the
    parameters and stopped the compile (``_compiled_inputs``) after Thunder had traced it: 2.1 of the 4.8 s of
    an 8-block MLP's first training call (session 34). Asked of the module before compiling."""
    return torch.is_grad_enabled() and isinstance(fn, torch.nn.Module) and any(
        p.requires_grad for p in fn.parameters())
