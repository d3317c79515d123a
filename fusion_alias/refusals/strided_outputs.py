"""A refusal in calls that compute gradients: a returned view made by ``as_strided`` of a view of an argument.

Note [as_strided of a view, returned]
-------------------------------------
Eager's ``v.as_strided(size, stride)`` addresses ``v``'s storage, but its backward keeps only the elements
``v`` holds: the gradient of an element outside ``v`` goes nowhere. A view of an argument that the program
returns is remade after the call as ``a.as_strided(...)`` of the argument ``a`` itself (``view_outputs.py``,
Note [an output view of an argument, written in place later]), whose backward passes every element's gradient
to ``a``. Worked example (fuzz seed 31004 #8, strided --grad; ``a`` of 12 elements, from a leaf)::

    t0 = a.as_strided((2, 3), (3, 1))      # elements 0..5 of a
    t1 = t0.as_strided((4, 2), (2, 2))     # elements 0, 2, 4, 6, 8: 6 and 8 are not t0's
    return t1, t0 * 2                      # eager: no gradient reaches a[6], a[8] from t1; the remade t1 passed one

Plain ``thunder.jit`` returns eager's gradients (its output is not remade). Which elements the intermediate view
holds depends on layouts the trace does not hold, so such an output is refused, loud, with gradients: an
``as_strided`` of a view of an argument that requires grad, returned or viewed further and returned. An
``as_strided`` of the argument itself (its own elements are what the remade view restricts to) runs.
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy
import thunder.core.dtypes as dtypes
import thunder.core.prims as prims

from fusion_alias.aliasing import proxy_args, tensor_outs
from fusion_alias.errors import AliasInputError
from fusion_alias.refusals.saved_versions import _views_maybe, _views_only


def check_returned_strided_views(top_bsyms, tensor_inputs) -> None:
    """Note [as_strided of a view, returned]: refuse a returned view, through ``as_strided`` of a view of an
    argument that requires grad (``top_bsyms``: the computation trace's symbols as the user called them)."""
    views = _views_only() | _views_maybe()
    arguments = {p.name for p in tensor_inputs if p.requires_grad}
    of_arguments = set(arguments)  # the arguments, and views of them
    through_strided: set = set()  # views through an as_strided of one of those views, and views of them
    for b in top_bsyms:
        if b.sym.id is prims.PrimIDs.RETURN:
            for a in proxy_args(b):
                if isinstance(a, TensorProxy) and a.name in through_strided and dtypes.is_inexact_dtype(a.dtype):
                    raise AliasInputError(
                        f"fusion_alias: the program returns {a.name}, a view made by as_strided of a view of an argument "
                        "that requires grad, in a call that computes gradients: not supported. Eager's gradient "
                        "reaches only the elements the inner view holds; the compiled program's output, a view of "
                        "the argument, would pass one to every element it addresses. Workaround: call as_strided on "
                        "the argument itself, or return a clone()")
            return
        if b.sym not in views or not b.args or not isinstance(b.args[0], TensorProxy):
            continue
        src = b.args[0].name
        outs = [o.name for o in tensor_outs(b)]
        if src in through_strided or (b.sym.name == "as_strided" and src in of_arguments and src not in arguments):
            through_strided.update(outs)
        elif src in of_arguments:
            of_arguments.update(outs)
