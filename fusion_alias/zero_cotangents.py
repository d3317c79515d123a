"""Thunder's backward with some cotangents known to be zero, as eager computes it: without them.

Note [a backward without the unread cotangents]
-----------------------------------------------
unreached_writebacks.py hands Thunder's backward zeros for the final values the loss does not read; a gradient
that is computed from those *and* from outputs the loss reads is ``u + v``, where ``v``, the unread part, is 0 or
NaN (``0 * inf``) at each element and eager has no ``v`` at all::

    def f(b):                           # b holds inf
        t0 = b * 2
        b.mul_(b.detach())              # unread: v = b.detach() * 0 = NaN where b is inf
        return t0                       # eager: b's gradient 2 everywhere; Thunder's: 2 + NaN

No run of the same backward on other cotangents tells ``v``'s NaN from ``u``'s own (``bernoulli(sigmoid(b.exp()))``
read, ``b`` written and unread: ``u`` is ``0 * inf`` itself, eager's NaN too). So, where a gradient that mixes both
is NaN somewhere, the backward is run again from its trace, rewritten: every fusion taken apart into its ops, and
the unread cotangents as *symbolic* zeros that each op passes on without computing (``mul``, ``div`` of a zero,
``neg``, a conversion, a reshape or broadcast, ``sum``, the VJP of an op Thunder registered from torch
(``detach_vjp``) of a zero cotangent: zero; ``add(x, 0)``, ``sub(x, 0)``: ``x``; ``sub(0, x)``:
``neg(x)``; ``where`` with a zero branch, and a comparison (``ne(g, g)``, eager_gradients.py's zeros made from ``g``): the zero
as a real zero tensor, which they select or compare but never multiply; ``index_select``/``take`` of a zero: zero;
``index_add(x, i, 0)``: ``x``; ``scatter`` of a zero into a zero: zero, else the zeros as real tensors, which it
places but never multiplies: the backward of inputs that overlap, read as views of one flat base).

A backward is linear in its cotangents, so a term computed from none of the cotangents it is given as tensors
(only from saved values and constants) that is *added* to one computed from them is zero: it is one of the zero
cotangents' contributions (Thunder moves the ``full(0)`` an ``index_add`` starts from into the forward, and the
zero cotangent's ``norm_vjp`` of ``inf`` reaches the sum through it: NaN, fuzz ``--special-values --grad``
70102 #10). ``add(u, v)``, ``sub`` of such a ``v`` is ``u`` (``neg(v)`` for ``sub(v, u)``), and a gradient that
is computed from none of them is None, as eager's.
A gradient that ends as a symbolic zero is None here (zeros for the caller, as for the gradients
from unread cotangents only). An op outside those rules reached by a symbolic zero
stops the rewrite (the caller refuses). The rewritten trace runs on torch (one executor, unfused) and is kept per
set of unread outputs, on the table of unreached_writebacks.py.
"""

from __future__ import annotations

import thunder.torch as ltorch
from thunder.core import prims
from thunder.core.proxies import Proxy, variableify
from thunder.core.pytree import tree_flatten
from thunder.core.trace import TraceProvenance, from_trace, tracectx

_ZERO_IF_ANY = {"mul"}  # (0 * x: zero, never computed)
_ZERO_IF_FIRST = {"div", "true_divide"}
# (ops that never multiply what they read: a zero read as a real tensor of zeros gives what eager computes)
_READ_AS_ZEROS = {"eq", "ne", "lt", "le", "gt", "ge", "isnan", "isfinite", "signbit"}
_LINEAR = {"neg", "convert_element_type", "reshape", "broadcast_in_dim", "transpose", "squeeze", "unsqueeze",
           "sum", "slice_prim", "slice", "expand", "permute", "clone", "shallow_copy", "real", "conj", "view",
           "flatten", "contiguous", "to", "type_as", "torch_prims_reshape_impl", "index_select", "take"}
_PLACES = {"index_add", "scatter"}  # (never multiply what they read)


class Unsupported(Exception):
    """The rewrite met an op outside its rules (module Note)."""


def _flat(bsyms):
    """``bsyms`` with each fusion replaced by its ops."""
    out = []
    for b in bsyms:
        if getattr(b.sym, "is_fusion", False) and b.subsymbols:
            out.extend(_flat(b.subsymbols))
        else:
            out.append(b)
    return out


def _op(b) -> str:
    return b.sym.name.rsplit(".", 1)[-1]


def _is_zero(x, zero) -> bool:
    return isinstance(x, Proxy) and x.name in zero


def _told(x, told, zero) -> bool:
    """Whether ``x`` is computed from a cotangent the backward is given as a tensor (module Note)."""
    return x.name in told and x.name not in zero


def _placed(b, op, zero, swap, out) -> bool:
    """``index_add``/``scatter`` of zeros (module Note) as a zero (added to ``zero``) or its base (added to
    ``swap``); False where the zeros are to be read as real tensors."""
    base = b.args[0]
    if op == "index_add":  # (ltorch's (a, dim, index, source), prims' (a, index, source, dim))
        others = [x for x in b.args[1:] if isinstance(x, Proxy) and x.dtype == base.dtype]
    else:  # (ltorch's (a, dim, index, value), prims' (a, index, value, dim))
        value = b.args[3] if isinstance(b.args[1], int) else b.args[2]
        if not isinstance(value, Proxy) and value != 0 or not _is_zero(base, zero):
            return False
        others = [value] if isinstance(value, Proxy) else []
    if not all(_is_zero(x, zero) for x in others):
        return False
    if _is_zero(base, zero):
        zero.add(out.name)
    elif isinstance(base, Proxy):
        swap[variableify(out)] = base
    else:
        return False
    return True


def rewritten(trace, zero_positions: frozenset):
    """The backward ``trace`` with the cotangents at ``zero_positions`` as symbolic zeros (module Note), made
    runnable on torch; raises :class:`Unsupported`."""
    bsyms = list(trace.bound_symbols)
    unpack = next(b for b in bsyms if b.args and isinstance(b.args[0], Proxy) and b.args[0].name == "cotangents"
                  and isinstance(b.output, (tuple, list)))
    zero = {o.name for i, o in enumerate(unpack.output) if i in zero_positions and isinstance(o, Proxy)}
    swap: dict = {}  # variableify(output) -> the proxy it is (add(x, 0) is x)
    new = from_trace(trace)
    new.set_provenance(TraceProvenance("fusion_alias: the backward without the unread cotangents"))
    kept = []
    told = {o.name for i, o in enumerate(unpack.output) if i not in zero_positions and isinstance(o, Proxy)}

    def real(x):  # a symbolic zero as a tensor of zeros (recorded into ``new``, collected below)
        if not _is_zero(x, zero):
            return x
        return ltorch.full(tuple(x.shape), 0, device=x.device, dtype=x.dtype)  # (not full_like: x is never computed)

    with tracectx(new):
        for b in _flat(bsyms[:-1]):
            if b.sym.id is prims.PrimIDs.DEL:
                continue  # (the names it frees may be symbolic now; the rewritten run is short-lived)
            b = b.from_bsym_swap_proxies(swap) if swap else b
            args = [a for a in tree_flatten((b.args, b.kwargs))[0] if isinstance(a, Proxy)]
            outs = [p for p in tree_flatten(b.output)[0] if isinstance(p, Proxy)]
            if _op(b) in ("add", "sub") and len(outs) == 1 and len(b.args) == 2 and all(
                    isinstance(x, Proxy) for x in b.args) and sum(_told(x, told, zero) for x in b.args) == 1:
                u = b.args[0] if _told(b.args[0], told, zero) else b.args[1]  # (the other: zero, module Note)
                if _op(b) == "sub" and u is b.args[1]:
                    kept.append(prims.neg.bind(u, output=outs[0]))
                    told.add(outs[0].name)
                else:
                    swap[variableify(outs[0])] = u
                continue
            if any(a.name in told for a in args):
                told.update(p.name for p in outs)
            if not any(a.name in zero for a in args):
                kept.append(b)
                continue
            outs = [p for p in tree_flatten(b.output)[0] if isinstance(p, Proxy)]
            op, first = _op(b), b.args[0] if b.args else None
            vjp_of_zero = op.endswith("_vjp") and not any(  # (a VJP is linear in its cotangents; args[0]: the primals)
                _is_zero(a, zero) for a in tree_flatten(first)[0])
            if op in _ZERO_IF_ANY or op in _LINEAR or vjp_of_zero or op in _ZERO_IF_FIRST and _is_zero(first, zero):
                zero.update(p.name for p in outs)
            elif op in ("add", "sub") and len(outs) == 1 and len(b.args) == 2:
                other = b.args[1] if _is_zero(first, zero) else first
                if _is_zero(other, zero):
                    zero.add(outs[0].name)
                elif op == "sub" and _is_zero(first, zero):
                    kept.append(prims.neg.bind(other, output=outs[0]))
                elif isinstance(other, Proxy):
                    swap[variableify(outs[0])] = other
                else:
                    raise Unsupported(f"{op} of a number and a zero")
            elif op in _PLACES and len(outs) == 1 and _placed(b, op, zero, swap, outs[0]):
                continue
            elif op in _READ_AS_ZEROS or op in _PLACES:
                start = len(new.bound_symbols)
                args = [real(x) for x in b.args]
                kept.extend(new.bound_symbols[start:])
                del new.bound_symbols[start:]
                kept.append(b.from_bsym(args=tuple(args)))
            elif op == "where" and len(b.args) == 3:
                if all(_is_zero(x, zero) or (not isinstance(x, Proxy) and x == 0) for x in b.args[1:]):
                    zero.update(p.name for p in outs)
                    continue
                start = len(new.bound_symbols)
                branches = [real(x) for x in b.args[1:]]
                kept.extend(new.bound_symbols[start:])
                del new.bound_symbols[start:]
                kept.append(b.from_bsym(args=(b.args[0], *branches)))
            else:
                raise Unsupported(op)
        ret = bsyms[-1].from_bsym_swap_proxies(swap) if swap else bsyms[-1]
        grads = tuple(None if _is_zero(g, zero) or isinstance(g, Proxy) and g.name not in told else g
                      for g in ret.args[0])
        kept.append(ret.from_bsym(args=(grads, *ret.args[1:])))
    new.bound_symbols = kept
    from thunder.executors.passes import transform_for_execution
    from thunder.executors.pythonex import ex as python_ex
    from thunder.executors.torchex import ex as torch_ex

    return transform_for_execution(new, executors_list=(torch_ex, python_ex)).python_callable()


def run_without(table, saved, cotangents, zero_positions: frozenset):
    """Thunder's backward (``table.trace``) run with the cotangents at ``zero_positions`` as symbolic zeros;
    raises :class:`Unsupported` (also where the rewritten trace does not compile)."""
    fn = table.rewritten.get(zero_positions)
    if fn is None:
        try:
            fn = rewritten(table.trace, zero_positions)
        except Unsupported:
            raise
        except Exception as e:  # noqa: BLE001 - any failure to rewrite or compile: the caller refuses
            raise Unsupported(repr(e)) from e
        table.rewritten[zero_positions] = fn
    return fn(saved, cotangents)
