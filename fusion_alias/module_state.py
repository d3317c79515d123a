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
    The guard then keys the call by the new tensor's aliasing, as any input's.

    A name that moved from the buffers to the parameters (``m.u = m.b``: torch re-registers a buffer name
    given a ``Parameter`` as a parameter, tied to ``b``) is found under the other kind: its old tensor is in the
    table of buffers, where the compiled program reads ``u``, so the new one goes there. It was left alone, and
    every later call read the old buffer and wrote into it, silently (fuzz modules ``--grad`` seed 36311 #37;
    plain ``thunder.jit`` too)."""
    model = thunder_module._model
    seen = thunder_module.__dict__.setdefault("_fusion_alias_seen_state", {})
    buffers, parameters = named_state(model)
    tables = {"b": thunder_module._overrides_buffers, "p": thunder_module._overrides_parameters}
    for kind, named in (("b", buffers), ("p", parameters)):
        for name, t in named:
            key = (kind, name)
            ref = seen.get(key)
            before = ref() if ref is not None else None  # (weak: a rebound tensor is not kept alive here)
            if before is t:
                continue
            if before is None and seen:  # new under this kind: the same name under the other, moved?
                key_before = ("p" if kind == "b" else "b", name)
                ref = seen.get(key_before)
                before = ref() if ref is not None else None
                if before is not None and tables[key_before[0]].get(name) is before:
                    tables[key_before[0]][name] = t
                    seen[key_before] = weakref.ref(t)
            elif before is not None and tables[kind].get(name) is before:
                tables[kind][name] = t
            seen[key] = weakref.ref(t)


# Note [the module's tensors named in one walk]
# ---------------------------------------------
# ``named_buffers``/``named_parameters(remove_duplicate=False)`` walk the module tree through generators, once
# each: 64 us a call for an 8-block MLP, a tenth of its call (session 34). ``named_state`` walks it once, in
# torch's order (each module's own tensors, then its submodules, depth first; None entries skipped; a shared
# submodule under each of its names), where every module in the tree names its tensors as ``nn.Module`` does;
# a tree with a class that changes how (``named_modules``, ``_named_members``, ``named_parameters`` or
# ``named_buffers`` of its own) is asked through torch's methods.
_NAMING = ("named_modules", "_named_members", "named_parameters", "named_buffers")
_NAMES_AS_MODULE: dict[type, bool] = {}


def _names_as_module(cls) -> bool:
    plain = _NAMES_AS_MODULE.get(cls)
    if plain is None:
        plain = _NAMES_AS_MODULE[cls] = all(getattr(cls, m) is getattr(torch.nn.Module, m) for m in _NAMING)
    return plain


def named_state(model) -> tuple[list, list]:
    """``(list(model.named_buffers(remove_duplicate=False)), list(model.named_parameters(remove_duplicate=False)))``
    (Note [the module's tensors named in one walk])."""
    buffers: list = []
    parameters: list = []
    if not _walk(model, "", buffers, parameters):
        return list(model.named_buffers(remove_duplicate=False)), list(model.named_parameters(remove_duplicate=False))
    return buffers, parameters


def _walk(module, prefix: str, buffers: list, parameters: list) -> bool:
    if not _names_as_module(type(module)):
        return False
    for name, t in module._parameters.items():
        if t is not None:
            parameters.append((prefix + name, t))
    for name, t in module._buffers.items():
        if t is not None:
            buffers.append((prefix + name, t))
    for name, sub in module._modules.items():
        if sub is not None and not _walk(sub, prefix + name + ".", buffers, parameters):
            return False
    return True


def trains_parameters(fn) -> bool:
    """Note [a module's parameters ask for gradients before compiling]: a module called with gradients on whose
    parameters require grad computes gradients whatever its arguments; compiled without, the fusion pass saw the
    parameters and stopped the compile (``_compiled_inputs``) after Thunder had traced it: 2.1 of the 4.8 s of
    an 8-block MLP's first training call (session 34). Asked of the module before compiling."""
    return torch.is_grad_enabled() and isinstance(fn, torch.nn.Module) and any(
        p.requires_grad for p in fn.parameters())
