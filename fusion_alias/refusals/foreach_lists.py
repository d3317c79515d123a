"""An in-place foreach op whose list names one tensor twice, in a call that computes gradients
(foreach_lookasides.py, Note [a foreach op given one tensor twice]): the lookaside refuses a proxy
listed twice as it traces; this finds one tensor under two names once the alias analysis knows them.

Note [one tensor under two names]
---------------------------------
``f(a, b)`` called with ``b`` the very tensor ``a`` traces ``_foreach_mul_([a, b], 2.0)`` with two
proxies; so does ``b = a.add_(1); torch._foreach_mul_([a, b], 2.0)``, where eager's ``add_`` returns
``a`` itself. The alias analysis gives such names one root and one view key (an identical input is
a view of the first with no steps, a ``copy_`` result is its destination's view). Two names with one
view key are taken as one tensor, conservatively: two separate ``a[0]`` are two tensors to eager,
which gets them right, and are refused here all the same.
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy

from fusion_alias.aliasing import AliasInfo
from fusion_alias.foreach_lookasides import refuse_one_tensor_twice


def check_foreach_lists(foreach_writes, top_bsyms, info: AliasInfo, renamed: dict) -> None:
    """Raise ``AliasInputError`` for the first recorded in-place foreach op (``(op name, the names of
    its per-tensor ops' results)``, in trace order) whose list names one tensor under two names.
    ``top_bsyms``: the trace as the user called its ops (each per-tensor op, whose first argument is
    the tensor it writes); ``renamed``: trace names the flattened trace replaced -> the name it kept
    (``info`` knows only the latter)."""
    if not foreach_writes:
        return
    written_by = {b.output.name: b.args[0] for b in top_bsyms
                  if isinstance(b.output, TensorProxy) and b.args and isinstance(b.args[0], TensorProxy)}
    view_key = info.view_key
    for method, results in foreach_writes:
        first: dict[tuple, tuple[int, str]] = {}
        for i, result in enumerate(results):
            t = written_by.get(result)
            key = view_key.get(renamed.get(t.name, t.name)) if t is not None else None
            if key is None:
                continue
            j, name = first.setdefault(key, (i, t.name))
            if j != i:
                raise refuse_one_tensor_twice(method, f"the tensor {name} (as {t.name} too)", j, i)
