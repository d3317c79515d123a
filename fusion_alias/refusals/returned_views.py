"""A refusal in calls that compute gradients and write nothing in place: a returned view that eager
passes no gradient through (Note [a view made under no_grad, returned]). Programs that write run the
same rule inside ``saved_versions.check_saved_versions``."""

from __future__ import annotations

from thunder.core.proxies import ProxyTag, TensorProxy
import thunder.core.dtypes as dtypes
import thunder.core.prims as prims

from fusion_alias.aliasing import proxy_args, tensor_outs
from fusion_alias.errors import AliasInputError
from fusion_alias.refusals.saved_versions import _is_a_view, _views_maybe, _views_only
from fusion_alias.refusals.view_errors import refuse_no_grad_view_output


# Note [a view made under no_grad, returned]
# -------------------------------------------
# Eager's view of a tensor that requires grad, made under ``torch.no_grad()``, requires grad too but has no
# ``grad_fn``: a backward through it reaches no leaf. fusion_alias's output is Thunder's autograd Function's
# (or a view of the argument remade after the call, view_outputs.py), through which the gradient flows::
#
#     def f(b):                                   # b = leaf * 1
#         with torch.no_grad(): t = b.transpose(0, 1)
#         return t, b * 2                         # f(b)[0].sum().backward(): eager leaf.grad None, ours ones
#
# (fuzz seed 20758 #27, dtype --grad, session 20; plain ``thunder.jit``'s passes zeros). Refused, with gradients,
# for views of an argument only: the remade view carries its gradient; a view of an intermediate made under
# no_grad is Thunder's detached output, with eager's gradient (none). Session 21: a view of ``b.detach()`` of such
# an argument ``b`` the same, in a program that writes nothing (``return b, b.detach().t()``: eager's requires no
# grad; ours, remade as a view of ``b``, passed ``b`` a gradient: fuzz seed 20769 #10, layout --grad). ``b.detach()``
# itself and ``b.t().detach()`` are Thunder's detached outputs (no gradient reaches ``b``); a written program's
# outputs get eager's marks (autograd_functionalize.write_back, Note [outputs no gradient reaches]). Also a
# reshape or flatten made under no_grad (session-21 probe: ``with torch.no_grad(): t = b.reshape(-1)``, a view of a
# contiguous ``b``, passed a gradient); view or copy is not told here, so one that copies is refused too.
def check_returned_no_grad_views(top_bsyms, tensor_inputs) -> None:
    """Note [a view made under no_grad, returned], for a program that writes nothing in place (the checks above
    run for the others): refuse a returned view, made under no_grad or of a detach, of a tensor that requires grad."""
    views, maybe_views = _views_only(), _views_maybe()
    input_views = {p.name for p in tensor_inputs if p.requires_grad}  # and their views made with grad
    no_grad_views: set = set()
    detached: set = set()  # ``b.detach()`` of those, and (``detached_views``) views of it
    detached_views: set = set()
    for b in top_bsyms:
        if b.sym.id is prims.PrimIDs.RETURN:
            for a in proxy_args(b):
                if isinstance(a, TensorProxy) and a.name in no_grad_views and dtypes.is_inexact_dtype(a.dtype):
                    refuse_no_grad_view_output(a.name)
                if isinstance(a, TensorProxy) and a.name in detached_views and dtypes.is_inexact_dtype(a.dtype):
                    _refuse_detached_view_output(a.name)
            return
        src = getattr(b.args[0], "name", None) if b.args else None
        if (b.sym.name == "detach" or _drops_the_gradient(b)) and src in (input_views | no_grad_views | detached
                                                                          | detached_views):
            detached.update(o.name for o in tensor_outs(b))
        if (src in detached or src in detached_views) and (b.sym in views and _is_a_view(b) or b.sym in maybe_views):
            detached_views.update(o.name for o in tensor_outs(b))  # (a reshape that copies too: not told here)
            continue
        if not (b.sym in views and _is_a_view(b) or b.sym in maybe_views):  # (reshape: view or copy is not told here)
            continue
        outs = tensor_outs(b)
        no_grad = any(ProxyTag.DETACHED_AUTOGRAD_GRAPH in o.tags for o in outs)
        if src in no_grad_views or (no_grad and src in input_views):
            no_grad_views.update(o.name for o in outs)
        elif src in input_views and b.sym.name != "detach":
            input_views.update(o.name for o in outs)


def _drops_the_gradient(b) -> bool:
    """Note [a view through an integer dtype, returned]: ``x.view(torch.int32)``, a dtype view whose result carries
    no gradient (no result of a floating or complex dtype)."""
    outs = tensor_outs(b)
    return b.sym.name == "view" and bool(outs) and not any(dtypes.is_inexact_dtype(o.dtype) for o in outs)


# Note [a view through an integer dtype, returned]
# ------------------------------------------------
# Session 22. ``x.view(torch.int32)`` of a float32 ``x`` shares ``x``'s memory but carries no gradient, as
# ``x.detach()`` does; viewed back as float32 it is ``x``'s elements again, and eager's result requires no grad::
#
#     def f(a):                                             # a = leaf * 1, float32
#         t0 = a.view(torch.int32).view(torch.float32)[None]
#         return a * 2, t0                                  # eager: t0 requires no grad, leaf.grad from a * 2 only
#
# Thunder's output for ``t0`` is a custom Function's view of ``a``'s storage, remade after the call as
# ``a.as_strided(...)`` (view_outputs.py), which passed ``a`` a gradient: wrong leaf gradients, no error (fuzz seed
# 20797 #38, layout --grad; plain ``thunder.jit`` passes zeros). Refused as the view of a ``detach`` is.
def _refuse_detached_view_output(name: str) -> None:
    raise AliasInputError(
        f"fusion_alias: the program returns {name}, a view of a detach()ed tensor that requires grad (or of an integer "
        "view(dtype) of one), in a call that "
        "computes gradients and writes nothing in place: not supported. Eager's view requires no grad; the compiled "
        "program's output would pass a gradient back. Workaround: detach() last (x.t().detach() for x.detach().t())")
