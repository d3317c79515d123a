"""Buffers rebound on a module the call was given (an argument, or a module reached through a global), set as
eager sets them.

Note [a buffer rebound on a module the call was given]
-----------------------------------------------------
``m.steps += 1`` on a buffer is ``__iadd__`` (in place), then ``m.steps = <the same tensor>``; ``m.ema =
m.ema * 0.9 + x`` rebinds the buffer to a new tensor. Each is a store into ``m._buffers`` that Thunder's
interpreter records. Thunder 0.2.6 turns such a store into the epilogue's ``pack_buffer`` of the module called,
naming the buffer by the walk from it (``jit_ext.get_parameter_or_buffer_or_submodule_name_and_root``); for a
module that is not the called one or one of its submodules the walk asserts, and the call fails with a bare
``AssertionError`` (plain ``thunder.jit`` too)::

    def step(m, x):                 # m: an nn.Module the caller passes
        m.steps += 1
        m.ema = m.ema * 0.5 + x
        return x * m.steps

That was refused (fuzz ``--generator modules``: 37% of the ``--grad`` runs of seed 36314). The owner is an
object the prologue can reach as it reaches any tensor of the call (``args[0]``, ``G`` of the function's
globals): here each such store is taken out of Thunder's records before Thunder reads them and becomes an
epilogue symbol of ours, ``fusion_alias_rebind_given_buffer(m, 'steps', value, requires_grad)``, whose module
argument is a proxy with the owner's provenance, so the prologue unpacks the module of *this* call and hands it
to the epilogue (as Thunder does for the module called). It sets ``m._buffers[name]`` as eager's ``setattr``
does: a value that is the buffer itself (``m.steps += 1``) leaves it the object it was, and a value whose
traced result requires no grad is stored detached (dropped_attributes.py, Note [a buffer rebound on the module
called]). The next call reads the new tensor as an input like any other, and its aliasing is guarded as every
input's is.
"""

from __future__ import annotations

from functools import partial

from thunder.core import jit_ext
from thunder.core.interpreter import PseudoInst
from thunder.core.proxies import Proxy
from thunder.core.trace import get_tracectx, tracectx

from fusion_alias.epilogue_stores import epilogue_store, made_as_views, rebound_buffer, stores_into


def _rebind_given_buffer(module, name: str, value, requires_grad: bool = True, view: bool = False) -> None:
    """``module.<name> = value`` for a registered buffer, as eager does it (Note [a buffer rebound on a module the
    call was given]; ``view``: epilogue_stores.py, Note [a view stored over the buffer it views])."""
    rebound_buffer(module._buffers, name, value, requires_grad, view)


REBIND_GIVEN_BUFFER = epilogue_store("rebind_given_buffer", _rebind_given_buffer)
REBIND_GIVEN_BUFFER_TO_VIEW = epilogue_store("rebind_given_buffer_to_view", partial(_rebind_given_buffer, view=True))


def _thunder_names(owner) -> bool:
    """Whether Thunder's own walk names a buffer of ``owner`` (the module called, or a submodule of it)."""
    if owner.inst is PseudoInst.INPUT_FN:
        return True
    try:
        typ, _, _ = jit_ext.get_parameter_or_buffer_or_submodule_name_and_root(owner)
    except (AssertionError, AttributeError, IndexError):
        return False
    return typ == "_modules"


def take_given_module_stores(ctx) -> list:
    """Remove from the interpreter's records each store into the ``_buffers`` of a module Thunder cannot name,
    and return ``(owner provenance, buffer name, value)`` for the last store of each name."""
    taken = []
    for modified, owner, _ in list(stores_into(ctx, "_buffers")):
        if _thunder_names(owner) or not isinstance(modified.value, dict):
            continue
        last = {}
        for inst, *args in ctx._additional_outputs.pop(modified):
            if inst != PseudoInst.STORE_SUBSCR:
                raise NotImplementedError(f"fusion_alias: modification {inst} of a module's buffers: not supported")
            last[args[1].value] = args[2].value
        taken += [(owner, name, value) for name, value in last.items()]
    return taken


def store_given_module_buffers(taken: list, epilogue_trace) -> None:
    """Append a ``fusion_alias_rebind_given_buffer`` to the epilogue for each store :func:`take_given_module_stores`
    took, its module a proxy the prologue fills from the owner's provenance (one proxy per owner)."""
    owners: dict = {}
    views = made_as_views(get_tracectx(), [value for _, _, value in taken])  # (the computation trace, being recorded)
    for owner, name, value in taken:
        proxy = owners.get(owner)
        if proxy is None:
            proxy = owners[owner] = Proxy(history=owner)
            epilogue_trace.add_name(proxy.name)
        with tracectx(epilogue_trace):
            store = REBIND_GIVEN_BUFFER_TO_VIEW if getattr(value, "name", None) in views else REBIND_GIVEN_BUFFER
            bsym = store.bind(proxy, name, value, bool(getattr(value, "requires_grad", True)), output=None)
        epilogue_trace.bound_symbols.append(bsym)
