"""A write under ``torch.no_grad()`` in a call that computes gradients: the value written, with the
gradient path of the tensor written into.

Note [a no_grad write keeps the gradient path, exactly]
-------------------------------------------------------
Eager records nothing for ``with torch.no_grad(): a.add_(0.25)``: ``a`` keeps its history, and its
new value passes the gradient it receives back through that history unchanged, as if ``a`` had not
been written (functional_rewrite.py, Note [the grad mode of a write-back]). The functionalized
program needs a value that *is* the new one and whose gradient goes to the old one. It was
``(old - detach(old)) + detach(new)``: the gradient is right, but at an infinite or NaN element of
``old`` the value is ``inf - inf = nan``, not ``new``. Silently, for a real pattern::

    leaf = torch.tensor([1., inf], requires_grad=True); x = leaf * 1
    with torch.no_grad():
        x.add_(0.25)              # eager x = [1.25, inf]   (was [1.25, nan])
        x[x.isinf()] = 0          # eager x = [1.25, 0.]    (was [1.25, nan]: the mask was all False)

(fuzz ``--special-values --grad``, seed 31042 #40, #41, #47.) No arithmetic of ``old`` can be finite
where ``old`` is not and still pass ``old`` the whole gradient, so ``kept_path(old, new)`` is a
symbol of its own: its value is a copy of ``new`` (``prims.clone``, which moves no bits: a float16
value or a complex infinity is not rounded or turned into NaN, as ``mul(x, 1)`` turns ``inf+1j``
into ``inf+nanj``), and its gradient rule, lent to Thunder's autodiff, puts the incoming gradient
on ``old`` and none on ``new``, as eager's missing record does. Where no autodiff runs (nothing it
reads requires grad), it is the ``clone`` it decomposes into.
"""

from __future__ import annotations

from thunder.core import prims
from thunder.core.proxies import ProxyTag
from thunder.core.symbol import Symbol
from thunder.core.transforms import get_grad, put_grad, register_grad


def _kept_path_meta(old, new):
    return prims.clone(new)


kept_path = Symbol(name="kept_path", meta=_kept_path_meta, id="fusion_alias.kept_path")


def _kept_path_grad(old, new):
    result = prims.clone(new)
    put_grad(old, get_grad(result))  # (``new`` gets nothing: eager recorded no use of it)
    return result


register_grad(kept_path.id, _kept_path_grad)


def detached_view(x):
    """``x`` as a constant for Thunder's autodiff, bit for bit ``x``, and ``x``'s memory: a shallow copy (a view)
    tagged as made under no_grad, as eager's ``x.detach()`` is a view. A copy here made an output
    ``t0.detach().reshape(4, 1)`` memory of its own beside the output ``t0`` it views in eager, so a later
    write into one missed the other (fuzz seed 31046 #58, #74, ``--grad --write-outputs``)."""
    out = prims.shallow_copy(x)
    out.tags.add(ProxyTag.DETACHED_AUTOGRAD_GRAPH)
    return out
