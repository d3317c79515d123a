"""Views Thunder 0.2.6 keeps as one opaque torch call, rewritten as the view prim they are.

Note [narrow is a slice]
------------------------
Thunder's ``torch.narrow`` has no decomposition: the torch executor runs it whole, so fusion_alias
saw an op that may return a view of its argument and nothing more. Without gradients it stayed
outside regions (a fusion break), and its result was a root of its own in its argument's memory
group; with gradients a write through it, or a read of it after a write into its memory, was
refused ("cannot express as views of one tensor"): the functional rewrite replays view chains,
and an opaque op has none. Yet ``x.narrow(d, s, n)`` is exactly ``x[..., s:s + n, ...]``, the same
memory, offset, sizes and strides: a slice. Worked example, ``c`` of shape ``[4, 3]``::

    t1 = torch.narrow(c, 0, 1, 2)                          # before
    t1 = prims.slice_prim(c, [1, 0], [3, 3], [1, 1])       # after: c's view chain, replayable

So it becomes that prim wherever its arguments are Python ints in range (a negative ``dim`` or
``start`` counts from the end, as in eager). Anything else (a symbolic size, a tensor ``start``, a
range eager rejects) keeps the op whole, and torch raises eager's error when it runs. The KV-cache
idiom ``cache.narrow(1, pos, n).copy_(k)`` then joins a region, and runs with gradients.
``x.swapaxes(i, j)`` (``swapdims``), opaque the same way, is ``prims.transpose`` with ``i`` and ``j``
exchanged in the identity permutation.
"""

from __future__ import annotations

import thunder.core.prims as prims
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol


def as_view_prim(bsym: BoundSymbol) -> BoundSymbol | None:
    """``bsym`` as the view prim it is (Note [narrow is a slice]), or None where it is not one of the ops
    rewritten here or its arguments are not plain."""
    name = bsym.sym.name
    if name not in _REWRITES or bsym.subsymbols or bsym.kwargs:
        return None
    args = bsym.args
    if not args or not isinstance(args[0], TensorProxy) or not isinstance(bsym.output, TensorProxy):
        return None
    shape = tuple(args[0].shape)
    if not shape or not all(type(x) is int for x in (*args[1:], *shape)):
        return None
    return _REWRITES[name](bsym, shape)


def _narrow(bsym: BoundSymbol, shape: tuple) -> BoundSymbol | None:
    if len(bsym.args) != 4:
        return None
    a, dim, start, length = bsym.args
    if not -len(shape) <= dim < len(shape):
        return None
    dim %= len(shape)
    size = shape[dim]
    if not -size <= start <= size:
        return None
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        return None
    starts = [0] * len(shape)
    ends = list(shape)
    starts[dim], ends[dim] = start, start + length
    if tuple(bsym.output.shape) != tuple(e - s for s, e in zip(starts, ends)):
        return None
    return prims.slice_prim.bind(a, starts, ends, [1] * len(shape), output=bsym.output)


def _swapaxes(bsym: BoundSymbol, shape: tuple) -> BoundSymbol | None:
    if len(bsym.args) != 3:
        return None
    a, i, j = bsym.args
    n = len(shape)
    if not (-n <= i < n and -n <= j < n):
        return None
    perm = list(range(n))
    perm[i % n], perm[j % n] = perm[j % n], perm[i % n]
    if tuple(bsym.output.shape) != tuple(shape[p] for p in perm):
        return None
    return prims.transpose.bind(a, tuple(perm), output=bsym.output)


_REWRITES = {"narrow": _narrow, "swapaxes": _swapaxes, "swapdims": _swapaxes}
