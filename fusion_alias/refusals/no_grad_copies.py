"""A refusal in calls that compute gradients and write in place: a ``.contiguous()`` copy made under ``no_grad``,
returned (Note [a contiguous copy made under no_grad, returned]).

Note [a contiguous copy made under no_grad, returned]
-----------------------------------------------------
Eager's ``.contiguous()`` under ``torch.no_grad()`` of a tensor ``b`` that requires grad is ``b`` itself where
``b`` is contiguous (it requires grad) and else a copy, which requires no grad. In a call that writes in place,
the functionalization (autograd_functionalize.py) keeps ``contiguous`` opaque, a possible view of ``b``, and
marked the returned copy as requiring grad (with a ``CloneBackward0``), where eager's requires none::

    def f(b):                             # b = leaf * 1, (4, 4)
        b.detach().add_(1.0)              # a write: the call is functionalized
        with torch.no_grad():
            t = b.t().contiguous()        # eager: a copy, t.requires_grad False
        return t, b * 2                   # was: t.requires_grad True

A wrong ``requires_grad`` flag is a wrong result (a loss of ``t`` alone ran where eager raises "does not require
grad"; found beside fuzz ``--generator calls --grad`` seed 35051 #14, session 41). Which of the two eager returns
depends on ``b``'s layout at the call, which the trace does not hold (the flattened trace's alias analysis gives
every ``contiguous`` result a memory of its own), so a returned ``contiguous`` made under no_grad of a tensor that
requires grad is refused in ``saved_versions.check_saved_versions``, as a program that writes nothing refuses it
(returned_views.py, which runs after). ``t * 1`` or any other value computed from it gets eager's flag already
(computed under grad mode from a tensor made under no_grad or from ``b``: both require grad only where eager's
does). The reshape that copies is read right instead (Note [a copying reshape made under no_grad],
autograd_functionalize.py: layouts.copying_reshapes decides view or copy from the call's tensors).
Note [a copying reshape made under no_grad]
-------------------------------------------
Eager's ``with torch.no_grad(): t = b.t().reshape(16)`` of a ``b`` that requires grad copies, and the copy requires
no grad. ``autograd_functionalize._clone_before`` puts a ``prims.clone`` before such a reshape (layouts.copying_reshapes'
decision); the clone is tagged as made under no_grad when the reshape was, so ``gradient_paths.requires_grad_by_name``
reads it (and ``t``, a view of it) as eager's, requiring no grad. Untagged, ``t`` came back requiring grad in a call
that writes in place (fuzz ``--generator calls --grad`` seed 35051 #14; tests/test_session41_no_grad_copies.py)::

    b.detach().add_(1.0)
    with torch.no_grad():
        t = b.t().reshape(16)     # eager: a copy, t.requires_grad False; was True
    return t
"""

from __future__ import annotations

import thunder.core.dtypes as dtypes
from thunder.core.proxies import TensorProxy

from fusion_alias.errors import AliasInputError


def is_no_grad_contiguous_copy(b, args, outs, requires, memory) -> bool:
    """Whether ``b`` (a top-level symbol traced under ``no_grad``) is a ``contiguous`` of a tensor that requires
    grad, with a floating result: a copy or the tensor itself, as its layout decides."""
    if b.sym.name != "contiguous" or not args or not isinstance(args[0], TensorProxy) or not requires(args[0]):
        return False
    return any(dtypes.is_inexact_dtype(o.dtype) for o in outs)


def refuse_no_grad_contiguous_output(name: str) -> None:
    raise AliasInputError(
        f"fusion_alias: the program returns {name}, made by .contiguous() under torch.no_grad() of a tensor that "
        "requires grad, in a call that computes gradients: not supported (eager returns the tensor itself, which "
        "requires grad, or a copy, which does not, as its layout decides; the compiled program's requires_grad flag "
        "would not follow). Workaround: return it .detach()ed, or use .clone() under torch.no_grad()")
