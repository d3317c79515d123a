"""The epilogue of a functionalized call (``autograd_functionalize.functionalize``): Thunder's epilogue taking
the final values of the inputs written, and the stores of values that outlive the call (a rebound buffer:
``dropped_attributes.STORES``) with eager's ``requires_grad``, or refused where eager's store is a view."""

from __future__ import annotations

import thunder.core.dtypes as dtypes
import thunder.core.prims as prims
from thunder.core.proxies import TensorProxy, variableify
from thunder.core.trace import from_trace, tracectx

from functools import partial

from fusion_alias import dropped_attributes, given_module_buffers
from fusion_alias.epilogue_stores import epilogue_store
from fusion_alias.errors import AliasInputError

STORES = dropped_attributes.STORES | {given_module_buffers.REBIND_GIVEN_BUFFER.name,
                                      given_module_buffers.REBIND_GIVEN_BUFFER_TO_VIEW.name}


def eager_store_flags(epilogue, epilogue_trc, outs, requires) -> None:
    """Each store of a value that outlives the call (a rebound buffer: ``dropped_attributes.STORES``) in
    ``epilogue`` given eager's ``requires_grad`` of the value after the program (dropped_attributes.py, Note [a
    write after the value was made]): the traced flag is the value's before later writes into its memory."""
    args = list(epilogue_trc.args)[len(epilogue_trc.args) - len(outs):] if outs else []
    eager = {a.name: bool(requires(o.name)) and dtypes.is_inexact_dtype(o.dtype)
             for a, o in zip(args, outs) if isinstance(a, TensorProxy) and isinstance(o, TensorProxy)}
    for i, b in enumerate(epilogue.bound_symbols):
        if b.sym.name in STORES and len(b.args) == 4 and getattr(b.args[2], "name", None) in eager:
            epilogue.bound_symbols[i] = b.from_bsym(args=(*b.args[:3], eager[b.args[2].name]))


def refuse_stores_of_input_views(epilogue, epilogue_trc, outs, info, tensor_inputs, prologue_trc=None) -> None:
    """Note [a buffer rebound to a view of an input, functionalized]
    A buffer of the module called rebound in ``forward`` to a view of a tensor the call reads
    (``self.run_mean = a[0].detach()`` with ``a = m.w[0:2]``, a view of the flat Parameter): eager's buffer
    shares that memory after the call, and a later write into it (an optimizer step) changes the buffer too.
    A call that computes gradients and writes in place is functionalized, and the value stored is the
    computation's output, a new tensor: the buffer came back a copy (fuzz seed 20616 #13, ``modules --grad``;
    after ``flat.add_(100)`` eager's buffer read ``[100, 101, 102]``, fusion_alias's ``[0, 1, 2]``). Refused
    until the store replays the view on the caller's tensor. The input itself stored (``self.kv = a``) is the
    caller's tensor and runs.

    Note [a buffer stored onto itself, functionalized]
    A store of a buffer's own memory, whole, into that same buffer (``self.n += 1``: ``__iadd__`` writes ``n``
    in place, then ``setattr`` stores its result, the tensor ``n`` itself) leaves eager's buffer the object it
    was: the store is a no-op, and the write-back puts the final value into the caller's tensor. It is dropped
    from the epilogue here (it was refused as a view of an input, session 31 probe: a counter buffer in a
    training step; plain ``thunder.jit`` runs it)::

        t_n = p5.get_buffer('n')                       # prologue: the buffer, an input of the call
        value = t_n.add_(1)                            # root t_n, no view between
        fusion_alias_rebind_buffer(p5, '.n', value)    # epilogue: dropped (was refused)
    """
    args = list(epilogue_trc.args)[len(epilogue_trc.args) - len(outs):] if outs else []
    inputs = {p.name: p for p in tensor_inputs}
    input_roots = {info.root.get(n, n) for n in inputs}
    of_input = {a.name: o for a, o in zip(args, outs)
                if isinstance(a, TensorProxy) and isinstance(o, TensorProxy) and o.name not in inputs
                and info.root.get(o.name, o.name) in input_roots}
    buffers = _buffers_unpacked(prologue_trc)
    kept = []
    for b in epilogue.bound_symbols:
        o = of_input.get(getattr(b.args[2], "name", None)) if b.sym.name in STORES and len(b.args) >= 3 else None
        if o is not None and _onto_itself(b, o, info, inputs, buffers):
            if b.sym.name in _AS_NEW_VIEW:  # (Note [a view of a buffer stored onto it, functionalized])
                with tracectx(epilogue):
                    kept.append(_AS_NEW_VIEW[b.sym.name].bind(*b.args, output=None))
            continue
        if o is not None:
            raise AliasInputError(
                f"fusion_alias: in a call that computes gradients and writes in place, the program rebinds "
                f"the buffer {str(b.args[1]).lstrip('.')!r} to a view of memory the call was given (eager's "
                "buffer then shares that memory after the call): not supported (a functionalized call would "
                "store a copy). Workaround: store a copy (`.clone()`), or write into the buffer in place")
        kept.append(b)
    epilogue.bound_symbols = kept


# Note [a view of a buffer stored onto it, functionalized]
# -------------------------------------------------------
# ``self.u = self.u.view(3)`` (or ``self.u[:]``, ``self.u.detach()``) in a call that computes gradients: eager's
# buffer becomes a new tensor object over the same memory (epilogue_stores.py, Note [a view stored over the buffer
# it views]). The store, of the buffer's whole memory onto itself, was dropped as ``self.n += 1``'s is (Note [a
# buffer stored onto itself, functionalized], above), and the buffer stayed the object it was (session 45, fuzz
# modules --grad with fuzz/modules_view_rebinds.py's form: seed 45204 #6, ``m.u = m.u.view(3)``). The value stored
# there is the computation's output, a new tensor; the store that replaces it takes the buffer's own tensor (the
# caller's, which the write-back updates) at the end of the epilogue and stores a new view of it, as eager does.
def _own_view_stored(store, target, name: str, value, requires_grad: bool = True) -> None:
    """``store(target, name, <the buffer's tensor>, requires_grad)`` with ``view=True`` (Note [a view of a buffer
    stored onto it, functionalized]): a new tensor object over the buffer's memory."""
    module = getattr(target, "_model", target)
    owner_name, _, leaf = str(name).lstrip(".").rpartition(".")
    owner = module.get_submodule(owner_name) if owner_name else module
    store(target, name, owner._buffers[leaf], requires_grad, view=True)


_AS_NEW_VIEW = {
    dropped_attributes._REBIND_BUFFER_TO_VIEW.name: epilogue_store(
        "rebind_buffer_to_its_view", partial(_own_view_stored, dropped_attributes._rebind_buffer)),
    given_module_buffers.REBIND_GIVEN_BUFFER_TO_VIEW.name: epilogue_store(
        "rebind_given_buffer_to_its_view", partial(_own_view_stored, given_module_buffers._rebind_given_buffer)),
}


def _buffers_unpacked(prologue_trc) -> dict:
    """``{input name: (module proxy name, buffer name)}`` for each ``unpack_buffer`` of the prologue (printed
    ``t_n = p5.get_buffer('n')``)."""
    found = {}
    for b in getattr(prologue_trc, "bound_symbols", ()):
        if b.sym.id is prims.PrimIDs.UNPACK_BUFFER and len(b.args) == 2 and isinstance(b.output, TensorProxy):
            found[b.output.name] = (getattr(b.args[0], "name", None), b.args[1])
    return found


def _onto_itself(store, o, info, inputs: dict, buffers: dict) -> bool:
    """Note [a buffer stored onto itself, functionalized]: ``store`` puts into a buffer of the module called the
    whole memory of the input unpacked from that buffer, in its shape and dtype."""
    root = info.root.get(o.name, o.name)
    p = inputs.get(root)
    if p is None or info.chain.get(o.name, ()) or (tuple(o.shape), o.dtype) != (tuple(p.shape), p.dtype):
        return False
    return buffers.get(root) == (getattr(store.args[0], "name", None), str(store.args[1]).lstrip("."))


def epilogue_returning_finals(epilogue_trc, finals, constants=(), differentiable=(), n_outputs=0, returned=(), same=None):
    """Thunder's epilogue (flat outputs -> the program's return structure), taking the final values
    after the outputs and returning ``(structure, finals, the outputs at positions constants, the
    outputs at positions differentiable, the outputs at positions returned)``. ``same``: output position ->
    an earlier one whose tensor eager returns there too (same_object_outputs.py, its Note)."""
    if epilogue_trc is None:
        raise AliasInputError("fusion_alias: a call that computes gradients and writes in place needs Thunder's epilogue")
    from thunder.core.codeutils import SigInfo

    new = from_trace(epilogue_trc)
    *body, ret = epilogue_trc.bound_symbols
    outputs = list(epilogue_trc.args)[len(epilogue_trc.args) - n_outputs:] if n_outputs else []
    swap = {variableify(outputs[j]): outputs[i] for j, i in (same or {}).items() if max(i, j) < len(outputs)}
    if swap:  # (uses only: each output stays a parameter)
        body, ret = [b.from_bsym_swap_proxies(swap) for b in body], ret.from_bsym_swap_proxies(swap)
        outputs = [outputs[(same or {}).get(k, k)] for k in range(len(outputs))]
    with tracectx(new):
        taken = set(new.names) | {name for name, _ in epilogue_trc.siginfo().args}
        taken |= {getattr(a, "name", None) for a in epilogue_trc.args}
        names = []
        for i in range(len(finals)):
            name, k = f"final{i}", 0
            while name in taken:
                k += 1
                name = f"final{i}_{k}"
            taken.add(name)
            names.append(name)
        params = [TensorProxy(name=n, like=f) for n, f in zip(names, finals)]
        new.bound_symbols = list(body)
        unpacks = []
        for p in params:
            new.push_scope(unpacks)
            prims.unpack_trivial(p, name=p.name)
            new.pop_scope()
    constant_params = tuple(outputs[i] for i in constants if i < len(outputs))
    differentiable_params = tuple(outputs[i] for i in differentiable if i < len(outputs))
    returned_params = tuple(outputs[i] for i in returned if i < len(outputs))
    marks = (ret.args[0], tuple(params), constant_params, differentiable_params, returned_params)
    new.bound_symbols = unpacks + list(body) + [ret.from_bsym(args=(marks,))]
    si = SigInfo(epilogue_trc.siginfo().name)
    si.args = list(epilogue_trc.siginfo().args) + [(p.name, None) for p in params]
    new._siginfo = si
    new.args = list(epilogue_trc.args) + params
    return new


