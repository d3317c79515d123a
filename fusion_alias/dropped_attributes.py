"""Attributes the program sets on an object that outlives the call, which Thunder 0.2.6 drops: refused;
buffers of the module called that the program rebinds, which Thunder 0.2.6 stores where nothing reads them:
set as eager does (Note [a buffer rebound on the module called]).

Note [an attribute set in forward is dropped]
---------------------------------------------
Thunder's interpreter records ``self.x = v`` on an object the program reaches (the module called, an
argument, a global) as a store into the object's ``__dict__``, and turns such stores into the
epilogue's ``pack_attr`` only where the object has a proxy of its own; for the module being called
it has none, and the store is dropped without a word (``jit_ext.process_recorded_modifications``)::

    class Last(nn.Module):
        def forward(self, k):
            self.last = k * 2                              # attention maps kept for inspection
            self.kv = torch.cat([self.kv, k[None]], 0)     # a cache rebound at each step
            return k + self.kv.sum(0)

Three calls return ``[2, 4, 6]`` (plain ``thunder.jit`` too) where eager returns ``[2, 5, 9]``;
``self.last`` stays None (hostile probe 13). While fusion_alias's executor compiles, the same
function first looks for such stores into objects reached from what the call was given, and raises,
naming the attribute. Stores Thunder does carry out (buffers, attributes of objects with a proxy) and
stores into objects of the call's own (``torch.enable_grad()`` keeps ``self.prev``) go on as before.
"""

from __future__ import annotations

import weakref
from functools import partial

import torch
from thunder.core import jit_ext, prims
from thunder.core.compile_data import get_compile_data
from thunder.core.interpreter import PseudoInst
from thunder.core.trace import get_tracectx, tracectx

from fusion_alias import given_module_buffers
from fusion_alias.epilogue_stores import detached_unless_required, epilogue_store, made_as_views, rebound_buffer, stores_into


def _dropped_stores(ctx) -> list[str]:
    """The attribute names the recorded modifications set through an object's ``__dict__`` that
    Thunder will drop (the object has no proxy)."""
    dropped = []
    for modified, owner, keys in stores_into(ctx, "__dict__"):
        if not isinstance(modified.value, dict):
            continue
        if hasattr(owner, "proxy"):
            continue  # (an object with a proxy: Thunder's epilogue sets the attribute)
        if not _reached_from_an_input(owner):
            continue  # (``torch.enable_grad()``'s ``self.prev``: an object of the call's own)
        dropped += keys
    return dropped


# Note [a buffer rebound on the module called]
# ---------------------------------------------
# ``self.steps = self.steps + 1`` (or ``self.ema = self.ema * 0.9 + x``, ``self.kv = torch.cat(...)``,
# ``self.run_mean = self.b.detach()``) rebinds a registered buffer of the module called to another tensor.
# Thunder 0.2.6 records it as a store into ``self._buffers`` and ends the epilogue with
# ``pack_buffer(module, '.steps', value)``, printed as ``module.set_buffer('.steps', value)``: for the
# module called the name gets a leading dot (``".".join([""] + ["steps"])``), so the value lands in the
# ThunderModule's table of buffers under a key nothing reads, and the user's module keeps its old tensor;
# for a submodule's buffer (``self.sub.buf = v``) it lands under the right key of that table, but the
# user's module still keeps the old one. Three calls of ``self.steps = self.steps + 1; return a *
# self.steps`` return ``a``, ``a``, ``a`` where eager returns ``a``, ``2a``, ``3a``, and ``m.steps``
# stays 0 (plain ``thunder.jit`` too; session 16 hand probe, found while adding the rebinding to the
# ``modules`` generator). In compilations with fusion_alias each ``pack_buffer`` of the epilogue is
# replaced by ``_rebind_buffer``, which sets the buffer as eager does, on the user's module (the one the
# ThunderModule wraps) and in the ThunderModule's table, which the next call's prologue reads: the table
# of every ThunderModule ``fusion_alias.jit`` made for that module, one per aliasing of the inputs, each
# with its own table filled when it was made (``_fusion_alias_siblings``; with only the one that ran,
# a later call of another aliasing read the buffer it had when its ThunderModule was made: fuzz seed
# 20101 #0, modules, the fifth call). A value
# that is the buffer itself, its memory and layout (``self.steps += 1``: ``__iadd__`` writes in place and
# then stores its result, the same tensor), leaves the buffer the object it was. The next call sees the
# new tensor as an input like any other: its aliasing with the rest (``self.ema = self.w.detach()``
# shares the weight's memory from then on) is guarded as every input's is. In a call that computes
# gradients every tensor the call's autograd function returns requires grad; where the traced value does
# not (``self.steps + 1``, ``self.ema * 0.9 + x.detach()``) the buffer gets it detached, as eager's is,
# else the next call's backward would reach into this call's graph ("Trying to backward through the
# graph a second time").
def _rebind_buffer(root, name: str, value, requires_grad: bool = True, view: bool = False) -> None:
    """``root.<name> = value`` for a buffer of the module called, as eager does it (Note [a buffer rebound on
    the module called]): on the user's module (``root._model``, the module ``thunder.jit`` wraps) and in the
    ThunderModule's own table of buffers, which later calls read. A value that is the buffer itself (its
    memory, layout and dtype: an in-place result, ``self.steps += 1``) leaves the buffer the object it was,
    as in eager. ``requires_grad`` False: eager's value requires no grad (``self.steps + 1``, an EMA of
    detached values), and the value, an output of the call's autograd function, is detached."""
    name = name.lstrip(".")
    model = getattr(root, "_model", root)
    owner_name, _, leaf = name.rpartition(".")
    owner = model.get_submodule(owner_name) if owner_name else model
    value = rebound_buffer(owner._buffers, leaf, value, requires_grad, view)
    if value is None:
        return
    for thunder_module in getattr(root, "_fusion_alias_siblings", None) or (root,):
        overrides = getattr(thunder_module, "_overrides_buffers", None)
        if overrides is not None and name in overrides:
            overrides[name] = value
        seen = vars(thunder_module).get("_fusion_alias_seen_state")
        if seen is not None:  # the tensor this call left there: a later rebinding outside a call is told from it
            seen[("b", name)] = weakref.ref(value)  # (module_state.py, Note [state rebound between calls]; fuzz seed 20101 #0)


_REBIND_BUFFER = epilogue_store("rebind_buffer", _rebind_buffer)
_REBIND_BUFFER_TO_VIEW = epilogue_store("rebind_buffer_to_view", partial(_rebind_buffer, view=True))  # (epilogue_stores.py, Note [a view stored over the buffer it views])


def _set_attribute(obj, name: str, value, requires_grad: bool = True, view: bool = False) -> None:
    """``obj.<name> = value`` as Thunder's ``pack_attr`` does it, with a value whose traced result requires no
    grad detached (Note [a buffer rebound on the module called]: ``m.scale = m.scale * 0.99`` on a module
    read from a global, in a call that computes gradients, got a tensor that requires grad; fuzz seed
    20416 #24, modules --grad). ``view``: eager's value is a view made in the call, a new tensor object even
    where it is the attribute's whole tensor (Note [a view stored over the attribute it views])."""
    if view and isinstance(value, torch.Tensor):  # (a tensor of before the call where the view was whole)
        value = value.view_as(value)
    setattr(obj, name, detached_unless_required(value, requires_grad))


# Note [a view stored over the attribute it views]
# ------------------------------------------------
# ``m.scale = m.scale[:]`` (or ``.view(3)``), ``scale`` a plain tensor attribute of a module read from a global:
# eager's attribute becomes a new view object of the old tensor (``m.scale is old`` False, ``m.scale._base is
# old``). The whole-tensor view ran as the tensor itself (the region hands its input back), so ``pack_attr``
# stored the old object onto itself; after ``m.scale = m.u`` it stored ``m.u`` itself where eager's is a view of
# it (fuzz modules 36321 #52; plain ``thunder.jit`` too). As for buffers (Note [a view stored over the buffer it
# views], epilogue_stores.py), a value an op returning a view made is stored as a new view of what ran
# (``view_as``: the same memory, ``_base`` the same root, a view-of-a-view where it was a new view already).
_SET_ATTRIBUTE = epilogue_store("set_attribute", _set_attribute)
_SET_ATTRIBUTE_TO_VIEW = epilogue_store("set_attribute_to_view", partial(_set_attribute, view=True))


def _rebind_buffers_of_the_module_called(epilogue_trace) -> None:
    """Replace the epilogue's ``pack_buffer`` (Thunder 0.2.6 stores a rebound buffer of the module called under
    the name ``'.steps'``, which nothing reads) by ``_rebind_buffer`` (Note [a buffer rebound on the module
    called]), and its ``pack_attr`` by ``_set_attribute``, each with the traced ``requires_grad`` of the value
    (Note [a write after the value was made])."""
    bsyms = epilogue_trace.bound_symbols
    packed = [b.args[2] for b in bsyms if b.sym.id in (prims.PrimIDs.PACK_BUFFER, prims.PrimIDs.PACK_ATTR)
              or b.sym.name in ("pack_buffer", "pack_attr")]
    views = made_as_views(get_tracectx(), packed)  # (called while the computation trace is recorded)
    for i, b in enumerate(bsyms):
        if b.sym.id is prims.PrimIDs.PACK_BUFFER or b.sym.name == "pack_buffer":
            root, name, value = b.args
            store = _REBIND_BUFFER_TO_VIEW if getattr(value, "name", None) in views else _REBIND_BUFFER
            with tracectx(epilogue_trace):
                bsyms[i] = store.bind(root, name, value, bool(getattr(value, "requires_grad", True)), output=None)
        elif b.sym.id is prims.PrimIDs.PACK_ATTR or b.sym.name == "pack_attr":
            obj, name, value = b.args
            store = _SET_ATTRIBUTE_TO_VIEW if getattr(value, "name", None) in views else _SET_ATTRIBUTE
            with tracectx(epilogue_trace):
                bsyms[i] = store.bind(obj, name, value, bool(getattr(value, "requires_grad", True)), output=None)


#: the epilogue's stores of a value that outlives the call, whose last argument is eager's ``requires_grad``
STORES = frozenset({_REBIND_BUFFER.name, _REBIND_BUFFER_TO_VIEW.name, _SET_ATTRIBUTE.name, _SET_ATTRIBUTE_TO_VIEW.name})

# Note [a write after the value was made]
# ---------------------------------------
# With ``skip_inplace_alias_updates`` Thunder's trace keeps the proxy a value had when it was made, so the
# epilogue stores the proxy of ``self.kv * 0.5`` for::
#
#     self.kv = self.kv * 0.5
#     self.kv[0].copy_(k * 2)        # k requires grad: eager's self.kv now requires grad (CopySlices)
#
# and that proxy requires no grad. Read as eager's flag, it detached the new buffer: ``m.kv.requires_grad``
# False where eager's is True, and a later call's backward no longer reached this call's graph, where
# eager's does (or raises "Trying to backward through the graph a second time"; fuzz seed 20504 #2,
# ``modules --grad``; plain ``thunder.jit`` too). A call that computes gradients and writes in place is
# functionalized, which knows eager's flag of every name after the program (Note [outputs no gradient
# reaches]); it sets the flag of each store (``STORES``) to that (``functionalized_epilogue.eager_store_flags``).
# A call that writes nothing in place keeps the traced flag, which no write can have changed.


def _reached_from_an_input(provenance) -> bool:
    """Whether an object's provenance starts at what the call was given (the function or module, its
    arguments, and through them its globals), through attribute and item lookups only: an object that
    outlives the call. A context manager the program makes (``with torch.enable_grad():`` sets
    ``self.prev``, ``torch.inference_mode()`` sets ``self.mode``) starts at a constant or a call."""
    while provenance.inst in _LOOKUPS and provenance.inputs:
        provenance = provenance.inputs[0]
    return provenance.inst.name.startswith("INPUT")


# attribute and item lookups: an object reached through them from an input is the input's; a call's
# result on the way (``torch.inference_mode()``: ``OPAQUE``, a ``__new__``) is an object of the call's own
_LOOKUPS = frozenset({PseudoInst.LOAD_ATTR, PseudoInst.BINARY_SUBSCR})


# Note [a second store that Thunder loses]
# ---------------------------------------
# ``m.scale = m.scale * 2; m.scale = m.scale + 1`` (``m`` a module read from a global, ``scale`` a plain tensor
# attribute; fuzz modules 36321 #52: ``m.scale = m.u; m.scale = m.scale[:]``): Thunder 0.2.6's interpreter records
# the first store as the modification and only updates its dict for the second, so the epilogue stores the first
# value (6 where eager has 7; plain ``thunder.jit`` too), silently. Where a recorded store's value is not what the
# dict holds at the end of the trace, the store Thunder would make is not eager's last: refused, naming the attribute.
def _refuse_lost_stores(ctx) -> None:
    # (a buffer set twice, ``self.u = self.u * 2; self.u = self.u + 1``, gets eager's last value: not refused)
    for modified, _owner, _keys in stores_into(ctx, "__dict__"):
        final = modified.value
        if not isinstance(final, dict):
            continue
        for inst, *args in ctx._additional_outputs[modified]:
            if inst != PseudoInst.STORE_SUBSCR or len(args) != 3:
                continue
            key, value = args[1].value, args[2].value
            if key in final and final[key] is not value:
                raise NotImplementedError(
                    f"fusion_alias: the function sets the attribute {key!r} of an object that outlives the call more "
                    "than once: not supported. Thunder 0.2.6 keeps the first value it was set to, not the last "
                    "(a wrong value, silently). Compute the final value first and set it once")


def register(executor) -> None:
    """Check the recorded stores before Thunder processes them, in compilations with ``executor``
    (Note [an attribute set in forward is dropped])."""
    original = jit_ext.process_recorded_modifications
    if getattr(original, "_fusion_alias_checked", False):
        return

    def process_recorded_modifications(ctx, epilogue_trace):
        compile_data = get_compile_data()
        if compile_data is not None and executor in compile_data.executors_list:
            dropped = _dropped_stores(ctx)
            if dropped:
                names = ", ".join(sorted(set(dropped)))
                raise NotImplementedError(
                    f"fusion_alias: the function sets the attribute(s) {names} of an object that outlives the call "
                    "(the module called, or an object it was given): not supported. Thunder 0.2.6 drops such an "
                    "assignment without an error (the module keeps its old value, and later calls read it). "
                    "Return the value instead, keep it in a registered buffer (register_buffer, then "
                    "self.buf.copy_(v) or self.buf[...] = v), or set it outside the jitted function")
            _refuse_lost_stores(ctx)  # Note [a second store that Thunder loses]
            taken = given_module_buffers.take_given_module_stores(ctx)  # Note [a buffer rebound on a module the call was given]
            result = original(ctx, epilogue_trace)
            given_module_buffers.store_given_module_buffers(taken, epilogue_trace)
            _rebind_buffers_of_the_module_called(epilogue_trace)  # Note [a buffer rebound on the module called]
            return result
        return original(ctx, epilogue_trace)

    process_recorded_modifications._fusion_alias_checked = True
    jit_ext.process_recorded_modifications = process_recorded_modifications
