"""An in-place foreach op whose earlier writes reach its later operands, in a call that computes
gradients (foreach_lookasides.py, Note [a foreach op given one tensor twice]): the lookaside refuses a
proxy listed twice as it traces; this finds the rest once the alias analysis knows the trace.

Note [which foreach lists eager differentiates as it computes]
--------------------------------------------------------------
Position ``i`` of the list runs before position ``j > i``. Eager's backward reads every operand as
it was before the call, so the two agree unless what position ``i`` writes may overlap an operand
of position ``j`` (what it writes included): ``_foreach_add_(ps, ps)`` reads and writes ``ps[i]``
at position ``i`` only, and is differentiated as eager does; ``_foreach_add_([a[0], a[1]], [a[1],
a[0]])`` writes ``a[0]`` first and reads it at position 1, and is refused. Two tensors may overlap
unless their memory groups differ or they are views of one root whose boxes do not meet
(``view_relations.view_box``: ``a[0]`` and ``a[1]``). An identical input is a view of the first with
no steps and a ``copy_`` result its destination (``f(a, a)``, ``b = a.add_(1)``): both overlap
``a``. Conservatively, so ``[a[0], a[0]]`` (two tensors to eager, which differentiates them right)
is refused too.
"""

from __future__ import annotations

from fusion_alias.aliasing import AliasInfo, tensor_args
from fusion_alias.foreach_lookasides import refuse_overlapping_list
from fusion_alias.view_relations import boxes_disjoint, view_box


def check_foreach_lists(foreach_writes, top_bsyms, info: AliasInfo, renamed: dict) -> None:
    """Raise ``AliasInputError`` for the first recorded in-place foreach op (``(op name, the names of
    its per-tensor ops' results)``, in trace order) of Note [which foreach lists eager differentiates
    as it computes]. ``top_bsyms``: the trace as the user called its ops (each per-tensor op, whose
    first argument is the tensor it writes); ``renamed``: trace names the flattened trace replaced ->
    the name it kept (``info`` knows only the latter)."""
    if not foreach_writes:
        return
    wanted = {r for _, results in foreach_writes for r in results}
    op_of = {b.output.name: b for b in top_bsyms if getattr(b.output, "name", None) in wanted}
    for method, results in foreach_writes:
        ops = [op_of.get(r) for r in results]
        for i, op in enumerate(ops):
            written = _known(op.args[0].name, info, renamed) if op is not None and op.args else None
            if written is None:
                continue
            for j in range(i + 1, len(ops)):
                if ops[j] is None:
                    continue
                for p in tensor_args(ops[j]):
                    other = _known(p.name, info, renamed)
                    if other is not None and _may_overlap(written, other, info):
                        raise refuse_overlapping_list(
                            method, f"list position {i} writes {op.args[0].name}, and position {j} reads or "
                            f"writes {p.name}, which may share memory with it")


def _known(name: str, info: AliasInfo, renamed: dict) -> str | None:
    name = renamed.get(name, name)
    return name if name in info.root else None


def _may_overlap(a: str, b: str, info: AliasInfo) -> bool:
    if info.group(a) != info.group(b):
        return False
    if info.root[a] != info.root[b]:
        return True
    return not boxes_disjoint(view_box(info, a), view_box(info, b))
