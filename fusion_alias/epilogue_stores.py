"""Symbols that store into an object that outlives the call, at the end of the epilogue, and what they share: the
recorded stores they replace (``stores_into``), the test for a value that is the object's tensor already, and the
detach of a value whose traced result requires no grad (dropped_attributes.py, given_module_buffers.py)."""

from __future__ import annotations

import torch
from thunder.core.interpreter import PseudoInst
from thunder.core.prims import OpTags
from thunder.core.symbol import Symbol
import thunder.torch as ltorch


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


def rebound_buffer(buffers: dict, leaf: str, value, requires_grad: bool, view: bool = False):
    """``buffers[leaf] = value`` (a module's ``_buffers``) as eager's ``module.<leaf> = value`` leaves it, and
    the tensor stored; None where the value is the buffer itself (its memory, layout and dtype: an in-place
    result, ``self.steps += 1``), which eager leaves the object it was. ``view``: eager's value is a view made
    in the call, a tensor object of its own even over the buffer's memory (Note [a view stored over the
    buffer it views])."""
    old = buffers.get(leaf)
    if same_tensor(old, value):
        if not view:
            return None
        if value is old:
            value = value.view_as(value) if requires_grad else value.detach()
    value = buffers[leaf] = detached_unless_required(value, requires_grad)
    return value


# Note [a view stored over the buffer it views]
# ---------------------------------------------
# ``self.run_mean = self.b.detach()`` where ``self.run_mean`` is already the tensor ``self.b`` (rebound by the
# caller): eager's buffer becomes a new tensor object over the same memory (``m.run_mean is m.b`` is False after
# the call). The store took any value with the buffer's memory and layout for an in-place result and kept the
# object (modules fuzz 36315 #25: ``m.run_mean is m.b`` stayed True). Whether eager's value is a new object is a
# fact of the trace: a value made by an op that always returns a view (``detach``, ``view``, ``x[0]``, ``t()``:
# Thunder's ``_syms_returning_views``) is one, an in-place result or the buffer read as it is is not. Such values
# are stored by the ``..._to_view`` symbols, which store a new object where the value is the old one.
def made_as_views(trace, values) -> set[str]:
    """The names among ``values`` (proxies) that an op of ``trace`` returning a view in eager makes (a symbol of
    ``thunder.torch._syms_returning_views`` at the trace's top level: Note [a view stored over the buffer it
    views])."""
    wanted = {getattr(v, "name", None) for v in values} - {None}
    if not wanted or trace is None:
        return set()
    views = ltorch._syms_returning_views
    found = set()
    for b in trace.bound_symbols:
        if b.sym in views:
            found.update(o.name for o in b.flat_proxy_outs if o.name in wanted)
    return found


def detached_unless_required(value, requires_grad: bool):
    """``value`` detached where its traced result requires no grad (Note [a buffer rebound on the module called])."""
    if not requires_grad and isinstance(value, torch.Tensor) and value.requires_grad:
        return value.detach()
    return value
