"""Copies of memory onto itself: eager writes nothing, so neither do regions.

Note [a copy whose source is its own destination]
-------------------------------------------------
::

    t5 = h.t().t()            # h = x[1].expand(4, 4): every row is one memory row
    t5[0:4] = t5              # eager: t5[0:4].copy_(t5), and t5[0:4] is t5's own memory

Eager's ``copy_`` returns at once when source and destination are views of the
same storage with the same offset, sizes, strides and dtype: nothing is
written, and so nothing is checked either, even when the destination is an
``expand()``ed tensor whose elements overlap each other. Thunder's trace
still holds ``t3 = copy_(copy_with_setitem(t5, slice(0, 4), t5), t5)``; kept,
it was refused as a write into an expanded tensor (fuzz seed 12015 #12), and
a write-back would store every expanded element.

``x.copy_(x)`` (the very same proxy) is dropped earlier, with Thunder's
``update_aliases`` (``flatten._drop_update_aliases``). Here the views differ as
proxies (``t5`` and ``t5[0:4]``), so the question is asked of the actual memory:
each view chain is replayed on the call's real input (or, for memory the
program made, on a meta tensor of its shape) and the layouts compared. The
decision depends only on the inputs' strides and relative offsets, which the
guard key holds (``guard.py``, Note [what the guard key holds]).
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy, variableify

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo
from fusion_alias.errors import AliasInputError
from fusion_alias.overlap import _view_bits
from fusion_alias.refusals.inplace_ops import _describe_setitem
from fusion_alias.refusals.operands import _actual_view, _setitem_value, _written_view


def _memory(view, name: str, info: AliasInfo):
    """What eager compares: (storage, offset, sizes, strides, dtype) of ``view``, the tensor ``name`` is."""
    if view.device.type == "meta":
        storage = ("made by the program", info.root[name])
    else:
        try:
            storage = view.untyped_storage().data_ptr()
        except Exception:  # a tensor without storage (a subclass): cannot tell
            return None
    return storage, view.storage_offset(), tuple(view.shape), tuple(view.stride()), view.dtype


def _source_view(src: TensorProxy, dst: TensorProxy, setitems: dict, info, actual, proxies, metas):
    """(the proxy the copy reads, the memory it reads, the memory it writes), the last two as views
    (None where unknown), or None when the copy is not one of these two forms.

    ``copy_(s, d)``: ``s`` and ``d``. ``copy_(copy_with_setitem(d, key, v), d)`` (``d[key] = v``):
    ``v`` and ``d[key]``, the slice eager's ``__setitem__`` copies ``v`` into.
    """
    made = setitems.get(src.name)
    if made is not None and getattr(made.args[0], "name", None) == dst.name:
        op = _describe_setitem(made.args[0], made.args[1], made.args[2])
        value = made.args[2]
        if op is None or op.key is None or not isinstance(value, TensorProxy):
            return None
        written = _written_view(op, info, actual, proxies, metas)
        read = _actual_view(value.name, info, actual, proxies, metas)
        if read is not None and written is not None:  # Note [a setitem value broadcast onto its own memory]
            read = _setitem_value(read, written)
        return value, read, written
    return src, _actual_view(src.name, info, actual, proxies, metas), _actual_view(dst.name, info, actual, proxies, metas)


# Note [a setitem value broadcast onto its own memory]
# ----------------------------------------------------
# ``d[key] = v`` with ``v`` of fewer or size-1 dimensions: eager's ``__setitem__`` drops ``v``'s leading
# size-1 dimensions, ``expand``s it to ``d[key]``'s sizes and then calls ``copy_``, whose early return
# compares the *expanded* view::
#
#     h = x[1].expand(4, 4)     # every row of h is x[1]'s memory
#     h[1::2, :] = x[1]         # x[1].expand(2, 4): offset, sizes (2, 4), strides (0, 1), as h[1::2, :]
#
# writes nothing in eager, where ``h[1::2, :].copy_(x[1])`` (no expand first) and ``h[0:1] = x[1]``
# (``x[1].expand(1, 4)`` has strides (4, 1), not h[0:1]'s (0, 1)) raise eager's overlap error. Compared
# un-expanded, the copy was kept and refused as a write into an expanded input that "eager rejects too"
# (fuzz seed 20811 #120, the hidden generator's global bound to ``x0[1].expand(4, 4)`` on the third call).


def drop_copies_onto_themselves(flat: list, info: AliasInfo, actual: dict, proxies: dict,
                                keep: frozenset = frozenset()) -> list:
    """``flat`` without the ``copy_`` bound symbols that copy memory onto itself
    (Note [a copy whose source is its own destination]); later uses of such a copy's result read its
    destination instead. ``proxies``: name -> tensor proxy (``proxies_by_name.tensor_proxies_by_name``),
    for the roots of memory the program made. ``keep``: source names whose copies stay (in a call that
    computes gradients, ``a.copy_(a.detach())`` writes no value but cuts ``a``'s gradient: Note [a copy from
    itself detached])."""
    setitems: dict = {}  # name -> the setitem symbol making it, those before the copy_ looked at
    root = info.root.get
    copy_id = ops.COPY_ID
    copies = []
    for b in flat:
        sym = b.sym
        if sym.id is not copy_id:
            if "setitem" in sym.name and isinstance(b.output, TensorProxy):
                setitems[b.output.name] = b
            continue
        src, dst = b.args[0], b.args[1]
        if not (isinstance(dst, TensorProxy) and isinstance(src, TensorProxy)):
            continue
        src_root = root(src._name)  # (aliasing.py, Note [proxy names read directly])
        if src_root is None or src._name in keep:
            continue
        dst_root = root(dst._name)
        if src._name in setitems or src_root == dst_root or (src_root in actual and dst_root in actual):
            copies.append(b)
    if not copies:
        return flat
    metas: dict = {}
    drop = set()
    for b in copies:
        dst = b.args[1]
        found = _source_view(b.args[0], dst, setitems, info, actual, proxies, metas)
        if found is None:
            continue
        value, read, written = found
        if read is None or written is None or value.name not in info.root or value.name in keep:
            continue
        if _memory(read, value.name, info) == _memory(written, dst.name, info) is not None:
            roots = (info.root.get(value.name), info.root.get(dst.name))
            if _view_bits(actual.get(roots[0])) != _view_bits(actual.get(roots[1])):
                # ``a.copy_(b)`` with ``b = a.conj()``: eager writes conj(a), and a later read of ``a`` is no read of
                # ``b`` (guard.py, Note [conjugate and negative views in the key])
                raise AliasInputError(
                    f"fusion_alias: copy_: the source {value.name} is a conjugate or negative view (x.conj()) of the "
                    f"memory it is copied into ({dst.name}): not supported. Copy from .resolve_conj() or .clone()")
            drop.add(b.output.name)
    if not drop:
        return flat
    swap: dict = {}
    out = []
    for b in flat:
        if swap:
            b = b.from_bsym_swap_proxies(swap, skip_output=True)
        if ops.is_copy(b) and isinstance(b.output, TensorProxy) and b.output.name in drop:
            swap[variableify(b.output)] = b.args[1]
            continue
        out.append(b)
    return out


# Note [a copy from itself detached]
# ----------------------------------
# ``t0 = a.copy_(a.detach())`` writes the values ``a`` has, but in a call that computes gradients eager's ``a``
# now comes from a detached source (CopyBackwards): its old history gets a zero gradient. Dropped as a copy onto
# itself, ``a`` kept its history and the leaf behind it got the loss's gradient (fuzz seed 20516 #141, ``basic
# --grad``; plain ``thunder.jit`` too). The functionalization keeps copies whose source is a detached name
# (``leaf_views.detached_names``), and its rewrite makes the detached value ``a``'s current value, as eager.
# The same holds for a source whose gradient is not the destination's by any other route: an input ``x =
# h.detach()[1]``, or ``h[1]`` taken under ``torch.no_grad()`` (which requires grad, with no history), in
# ``h[1].copy_(x)`` is ``h[1]``'s own memory, and eager's ``a.grad[1]`` is 0 where the dropped copy gave 2
# (hostile probe, session 25). Every grad-mode copy into memory that requires grad from a value that requires
# none, or that is rooted in another input, is kept (``gradient_paths.sources_of_other_gradients``).
