"""Symbols that store into an object that outlives the call, at the end of the epilogue, and what they share: the
recorded stores they replace (``stores_into``), the test for a value that is the object's tensor already, and the
detach of a value whose traced result requires no grad (dropped_attributes.py, given_module_buffers.py)."""

from __future__ import annotations

import torch
from thunder.core.interpreter import PseudoInst
from thunder.core.prims import OpTags
from thunder.core.symbol import Symbol


def stores_into(ctx, attribute: str):
    """``(the modified object, the provenance of its owner, the keys stored)`` for each ``owner.<attribute>``
    (a dict: ``__dict__``, ``_buffers``) the recorded modifications store keys into."""
    for modified, modifications in ctx._additional_outputs.items():
        prov = modified.provenance
        inputs = getattr(prov, "inputs", None) or ()
        if prov.inst is not PseudoInst.LOAD_ATTR or len(inputs) < 2:
            continue
        if inputs[1].inst is not PseudoInst.CONSTANT or inputs[1].value != attribute:
            continue
        keys = [str(args[1].value) for inst, *args in modifications if inst == PseudoInst.STORE_SUBSCR]
        yield modified, inputs[0], keys


def same_tensor(a, b) -> bool:
    if a is b:
        return True
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    return (a.dtype == b.dtype and a.device == b.device and a.shape == b.shape and a.stride() == b.stride()
            and a.storage_offset() == b.storage_offset()
            and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())


def _store_meta(target, name, value, requires_grad) -> None:
    return None


def epilogue_store(name: str, impl) -> Symbol:
    """An epilogue symbol that runs ``impl(target, name, value, requires_grad)``, kept by DCE (it returns nothing)."""
    return Symbol(name=f"fusion_alias_{name}", id=f"fusion_alias.{name}", meta=_store_meta, is_prim=True,
                  tags=(OpTags.DONT_DCE,),
                  _bind_postprocess=lambda b: setattr(b, "_call_ctx", {f"fusion_alias_{name}": impl}))


def rebound_buffer(buffers: dict, leaf: str, value, requires_grad: bool):
    """``buffers[leaf] = value`` (a module's ``_buffers``) as eager's ``module.<leaf> = value`` leaves it, and
    the tensor stored; None where the value is the buffer itself (its memory, layout and dtype: an in-place
    result, ``self.steps += 1``), which eager leaves the object it was."""
    if same_tensor(buffers.get(leaf), value):
        return None
    value = buffers[leaf] = detached_unless_required(value, requires_grad)
    return value


def detached_unless_required(value, requires_grad: bool):
    """``value`` detached where its traced result requires no grad (Note [a buffer rebound on the module called])."""
    if not requires_grad and isinstance(value, torch.Tensor) and value.requires_grad:
        return value.detach()
    return value
