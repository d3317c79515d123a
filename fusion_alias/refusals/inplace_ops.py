"""The user's in-place ops as they called them, recovered from the trace for the operand checks."""

from __future__ import annotations

from typing import NamedTuple

from thunder.core import dtypes
from thunder.core.proxies import TensorProxy, variableify
from thunder.core.pytree import tree_flatten

from fusion_alias import ops
from fusion_alias.aliasing import _proxies, copies_in, tensor_outs


# Note [which operands eager checks]
#     Eager checks the operands of an in-place op *as the user passed them*, before
#     broadcasting and before any decomposition, against the tensor the op writes
#     (``self``). Which operands, and how, depends on the kernel (checked on torch 2.9.1):
#
#     * TensorIterator ops (``add_``, ``mul_``, ``addcmul_``, ``clamp_``, ``lerp_``,
#       ``copy_``, comparisons, ...): every tensor operand, ``assert_no_partial_overlap``.
#       ``x.add_(x)`` is fine (the same memory at the same index), ``x.add_(x[0])`` and
#       ``x.add_(x[0], alpha=2)`` are not (``x[0]`` is checked before it is broadcast).
#     * index ops (``index_add_``, ``index_copy_``, ``index_put_``, ``scatter_``,
#       ``scatter_add_``, and ``a[idx] = v`` with a tensor index, which is
#       ``index_put_``): ``assert_no_overlap``, so even ``x.index_add_(0, i, x)`` raises.
#     * ``a[key] = v`` with basic indexing is ``a[key].copy_(v)`` after eager has
#       stripped ``v``'s leading 1-sized dims and expanded it to ``a[key]``'s shape; an
#       expanded value is "too hard" to check, and a 0-dim value becomes ``fill_``:
#       ``x[0:2] = x[0]`` and ``x[0:2] = x[0, 0]`` are fine, ``x[0:2] = x[1:3]`` is not.
#     * ``masked_fill_`` and ``fill_`` read their value as a number: nothing to check
#       (``x.fill_(x[0, 0])`` is fine; ``fill_`` is fusion_alias's own, inplace_lookasides.py).
#       ``index_fill_`` reads its value so too, and its index as the index ops above do:
#       ``x.index_fill_(0, x[:3], -1)`` and ``x.index_fill_(0, x, -1)`` raise (hostile probe, session 25).
#
#     * ``masked_scatter_``: nothing checked, and its source is read in the mask's order while
#       it writes: any overlap is refused (rule "ordered", Note [masked_scatter_ reads its source
#       as it writes], operands.py).
#
#     A tensor that is not non-overlapping-and-dense is "too hard" (eager does not
#     decide, neither do we): ``x.add_(x[0].expand(4, 4))`` runs in eager.
_ANY_OVERLAP_OPS = frozenset({"index_add_", "index_copy_", "index_put_", "scatter_", "scatter_add_"})
_ORDERED_SOURCE_OPS = frozenset({"masked_scatter_"})
_UNCHECKED_OPS = frozenset({"masked_fill_", "fill_", "index_fill_"})  # (index_fill_'s value: a number too)


class _InplaceOp(NamedTuple):
    """One in-place op as the user called it (``a.add_(b, alpha=2)``, ``a[0:2] = v``).

    (A named tuple: one is made per in-place op of the program, tens of thousands on large traces.)
    """

    name: str  # "add_", "setitem_", ...
    written: TensorProxy  # ``self``, the tensor the op writes (for setitem_, indexed by ``key``)
    key: object  # setitem_'s basic index (ints, slices, None, Ellipsis), else None
    # ((TensorProxy, rule), ...); rule: "partial" | "any" | "setitem" | "index" | "ordered" | "at_a_number"
    operands: tuple
    # a setitem_ with a list or tensor index (``a[1, [0, 2]] = v``): the key's basic part, every other entry a
    # full slice; eager's index_put_ checks its value against ``written[index_self]`` (Note [a list key is an
    # index_put_]). None otherwise.
    index_self: object = None


def _inplace_ops_by_write(top_bsyms, renamed: dict, checked=None) -> dict[str, _InplaceOp]:
    """The user's in-place ops among ``top_bsyms`` (the trace before flattening), by the
    name of each value they write (their ``copy_`` results). ``renamed`` maps
    variableified names of dropped ``update_aliases`` outputs to the proxies they stand for.
    ``checked(op)``, when given, says whether an op with operands may need its operand check;
    those it rules out are left out (Note [in-place ops whose operands need no check])."""
    found: dict[str, _InplaceOp] = {}
    for b in top_bsyms:
        if not b.subsymbols or b.sym.id is _COPY_ID:
            continue  # a bare prim copy_ is the trace's own write, not a user's op
        if not _may_need_checks(b):
            continue
        op = _describe_inplace_op(b, renamed)
        if op is None:
            continue
        if checked is not None and op.name not in _DESCRIBED_WITHOUT_OPERANDS and not (op.operands and checked(op)):
            continue  # (before its copy_ prims are looked for: Note [in-place ops whose operands need no check])
        copies = copies_in(b)  # (remembered: dtype_rules asks for the same)
        found.update((o.name, op) for c in copies for o in tensor_outs(c))
    return found


# Note [in-place ops whose operands need no check]
# ------------------------------------------------
# The map above serves two checks: the operand check, for the ops whose operands the alias analysis
# does not rule out (refusals.operands, Note [operand checks the analysis decides]), and the check of
# writes into expanded tensors, which reads only the names setitem_, masked_fill_, fill_ and
# index_fill_. An optimizer step ``p.add_(g, alpha=-lr)`` over 10k parameters and gradients that are
# separate inputs is neither: with ``checked`` the pass leaves such ops out before it looks for their
# ``copy_`` results, instead of finding all 10k and then filtering them (0.78 s of process time of the
# bench's ``wide`` trace at 100k symbols went to refusals).


_COPY_ID = ops.COPY_ID
_DESCRIBED_WITHOUT_OPERANDS = _UNCHECKED_OPS | {"setitem_"}


def _may_need_checks(bsym) -> bool:
    """Whether ``_describe_inplace_op(bsym)`` could say anything a check reads.

    Note [in-place ops without operands]: ``a.tanh_()`` or ``b.add_(1)`` has no tensor
    operand besides ``self``: its description would hold no operands, and the checks
    read a description only for its operands, or for its name when it is ``setitem_``
    or ``masked_fill_`` (``writes._accepted_on_expanded``). Such ops are left out of
    the map (a trace of a long loop of them has tens of thousands).
    """
    if bsym.sym.name in _DESCRIBED_WITHOUT_OPERANDS:
        return True
    for x in bsym.args[1:]:
        if not isinstance(x, (int, float, bool, complex, str)) and x is not None:
            return True  # a tensor, or a container that may hold one
    for x in bsym.kwargs.values():
        if not isinstance(x, (int, float, bool, complex, str)) and x is not None:
            return True
    return False


def _describe_inplace_op(bsym, renamed: dict) -> _InplaceOp | None:
    if renamed:
        def actual(x):
            return renamed.get(variableify(x), x) if isinstance(x, TensorProxy) else x
    else:
        actual = _same

    name = bsym.sym.name
    written = actual(bsym.args[0]) if bsym.args else None
    if not isinstance(written, TensorProxy):
        return None
    if name == "index_fill_":  # its value is read as a number; its index, as index ops read theirs
        index = actual(bsym.args[2]) if len(bsym.args) > 2 else bsym.kwargs.get("index")
        return _InplaceOp(name, written, None, ((index, "any"),) if isinstance(index, TensorProxy) else ())
    if name == "masked_fill_":  # its value is read as a number; its mask, as TensorIterator ops read operands
        mask = actual(bsym.args[1]) if len(bsym.args) > 1 else bsym.kwargs.get("mask")
        return _InplaceOp(name, written, None, ((mask, "partial"),) if isinstance(mask, TensorProxy) else ())
    if name in _UNCHECKED_OPS:
        return _InplaceOp(name, written, None, ())
    if name == "setitem_":
        return _describe_setitem(written, bsym.args[1], actual(bsym.args[2]), actual)
    rule = "any" if name in _ANY_OVERLAP_OPS else "ordered" if name in _ORDERED_SOURCE_OPS else "partial"
    # (the proxies among the other arguments: ``_proxies`` walks the tuples, lists and dicts ops take,
    # without the cost of Thunder's general ``tree_flatten``, once per in-place op of the program)
    rest = _proxies(bsym.kwargs, _proxies(bsym.args[1:], []))
    operands = tuple((actual(x), rule) for x in rest if isinstance(x, TensorProxy))
    return _InplaceOp(name, written, None, operands)


def _same(x):
    return x


# Note [a list key is an index_put_]
# ----------------------------------
# ``a[[3, 2, 1]] = b`` and ``a[1, [0, 2]] = b`` index with a list: eager's ``__setitem__`` applies the basic
# entries (ints, slices, None, Ellipsis) as views, then ``index_put_`` on that view with the list and tensor
# entries, and ``index_put_`` rejects any overlap of its value with the view it writes (``assert_no_overlap``;
# not where either is "too hard", and not for a one-element value under a bool mask, which is a
# ``masked_fill_``). A list key was taken for a basic key (its parts flatten to ints), so the value was compared
# with the copy ``a[[3, 2, 1]]`` makes, and ``a[[3, 2, 1]] = a[1]`` ran where eager raises (fuzz seed 31012 #36,
# hidden --grad; checked in eager: ``a[1, [0, 1]] = a[1, 2:4]`` raises, ``a[0:2, [0, 1]] = a[3, 0:2]`` runs).
# Such a setitem keeps its key (what the other checks read of it is as before) and says its basic part in
# ``index_self``; its value's rule is "index".
def _advanced(k) -> bool:
    return isinstance(k, (list, TensorProxy))


# Note [a tensor key is read as the write happens]
# ------------------------------------------------
# Eager checks the tensors of a setitem's key against what it writes too (torch 2.9.1, checked by hand):
# a lone bool mask with a one-element value is ``masked_fill_``, whose mask must not partly overlap the
# tensor written (``x[x] = False`` of a bool ``x`` runs, ``x[1:][x[:2]] = False`` raises); any other
# tensor key is ``index_put_``'s, which rejects any overlap with the view it writes (``x[x] = 0`` of an
# int64 ``x`` raises, as does ``x[:, x[0]] = False``). Unchecked, a region ran them (session 26 hand
# probe). ``masked_fill_(x, mask, v)`` called as such checks its mask alike.
# Note [a 0-d integer key is a number]
# ------------------------------------
# Eager indexes with a 0-dim integer tensor as with the int it holds: ``x[torch.tensor(1)] = x[0]`` is
# ``x[1].copy_(x[0])`` and runs; ``x[torch.tensor(0)] = x[0, 1:].repeat(2)`` too. Which elements it writes is
# known only at run time, so where the value shares memory with the tensor written the check cannot say
# whether eager rejects the write; it was refused saying "eager PyTorch rejects this too" (session 25 note).
# It is still refused, in words that claim nothing about eager (rule "at_a_number", operands.py).
def _a_number(k) -> bool:
    """Whether the key entry ``k`` is a 0-dim integer tensor (Note [a 0-d integer key is a number])."""
    return (isinstance(k, TensorProxy) and k.ndim == 0 and dtypes.is_exact_dtype(k.dtype)
            and not dtypes.is_boolean_dtype(k.dtype))


def _describe_setitem(written: TensorProxy, key, value, actual=_same) -> _InplaceOp | None:
    parts = key if isinstance(key, tuple) else (key,)
    advanced = [k for k in parts if _advanced(k)]
    key_tensors = [actual(k) for k in tree_flatten(key)[0] if isinstance(k, TensorProxy)]
    one_value = not isinstance(value, TensorProxy) or value.ndim == 0
    mask = len(advanced) == 1 and (
        (isinstance(advanced[0], TensorProxy) and advanced[0].dtype in (dtypes.bool8, dtypes.uint8))
        or (isinstance(advanced[0], list) and advanced[0] and all(isinstance(k, bool) for k in advanced[0])))
    if advanced and (isinstance(value, TensorProxy) or key_tensors):  # Note [a list key is an index_put_]
        own_key = None if key_tensors else key  # (None: a tensor index)
        basic = tuple(slice(None) if _advanced(k) else k for k in parts)
        if mask and one_value:  # masked_fill_: its value read as a number (Note [a tensor key is read as ...])
            masked_fill = len(parts) == 1
            return _InplaceOp("setitem_", written, own_key,
                              tuple((k, "partial" if masked_fill else "index") for k in key_tensors), basic)
        if all(map(_a_number, advanced)):  # Note [a 0-d integer key is a number]: the key is read as an int
            operands = ((value, "at_a_number"),) if isinstance(value, TensorProxy) else ()
            return _InplaceOp("setitem_", written, None, operands)
        operands = ((value, "index"),) if isinstance(value, TensorProxy) else ()
        return _InplaceOp("setitem_", written, own_key, operands + tuple((k, "index") for k in key_tensors), basic)
    if not key_tensors:  # basic indexing: a[key].copy_(value)
        operands = ((value, "setitem"),) if isinstance(value, TensorProxy) else ()  # a number: fill_
        return _InplaceOp("setitem_", written, key, operands)
    return None  # a tensor only in a slice's bounds (refused where traced: bool_keys.py): nothing to check


def _leaf_symbols(bsym) -> list:
    """``bsym`` down to the symbols that have no subsymbols (prims, mostly), whoever claims them."""
    if not bsym.subsymbols:
        return [bsym]
    return [leaf for sub in bsym.subsymbols for leaf in _leaf_symbols(sub)]


def _has_lost_its_inplace_ops(trace) -> bool:
    """Whether the trace writes with bare ``copy_`` symbols: the grad path decomposed the user's ops, or
    another executor claimed an op's halves (Note [an in-place op another executor split])."""
    return any(b.sym.name == "copy_" and not b.subsymbols for b in trace.bound_symbols)


# Note [an in-place op another executor split]
# --------------------------------------------
# Thunder hands each symbol to the first executor that claims it before the fusion pass. fusion_alias
# does not claim ops on dtypes it does not fuse (int8, uint8, int16, bool: ``executor._fusible_dtype``),
# so the torch executor takes their in-place ops apart: ``x.sub_(x[0, 3])`` of a uint8 ``x`` reaches
# the pass as ``t2 = sub(x, t1); copy_(t2, x)``, a bare ``copy_`` of the torch executor's (not the
# prim), and no ``sub_`` is left for the operand check to find. That check then said nothing, and
# the overlap eager rejects ("some elements of the input tensor and the written-to tensor refer to a
# single memory location") ran (session 26 hand probe). Such a trace is checked as traced, as the
# grad path's is (operands.py, Note [operands as the user wrote them]).


def _has_own_inplace_ops(original) -> bool:
    """Whether the traced program calls an in-place op fusion_alias traces itself (inplace_lookasides.py):
    Thunder hands it to the pass decomposed where Thunder's torch executor runs its out-of-place half
    (``x.hypot_(x[0])`` arrives as ``hypot``, then ``copy_``), so its operands are checked on the traced program."""
    return original is not None and any(
        isinstance(b.sym.id, str) and b.sym.id.startswith("fusion_alias.") for b in original.bound_symbols)


def _traced_program():
    """The computation trace as Thunder traced it (the user's ops intact), if compiling."""
    try:
        from thunder.core.compile_data import _compile_data

        _, cs = _compile_data.get()
        return cs.last_traces[0]
    except (LookupError, AttributeError, IndexError, TypeError):
        return None
