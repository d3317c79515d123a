"""What eager's out-of-place foreach functions save for the backward: every tensor of every list, in one node.

Note [an out-of-place foreach function saves every operand]
-----------------------------------------------------------
``torch._foreach_add(grads, params, alpha=wd)`` (torch.optim's foreach steps with weight decay) is traced as one
``add`` per tensor (foreach_lookasides.py, Note [a foreach op as one op per tensor]), and ``add`` saves nothing for
its backward. Eager's out-of-place foreach functions record *one* autograd node for the whole call, and for most of
them that node saves every tensor of every list argument, whatever requires grad (torch 2.9.1, checked by hand:
modify one list entry after the call, run the backward of any one result)::

    r = torch._foreach_add([a, b], [c, d], alpha=0.5)    # saves a, b, c, d
    d.add_(1)                                            # d's version moves
    r[0].sum().backward()                                # eager raises: "modified by an inplace operation"

So a later write into any operand made fusion_alias return a gradient where eager raises at backward (session 45's
fuzz form of foreach functions with ``--grad``, calls seed 35062: #9 ``t0, t1, t2 = torch._foreach_add([b, c, c],
[a, c, b], alpha=0.9)`` then ``torch._foreach_sub_([b, c, a], ...)``). foreach_lookasides.py's ``SAVES_EVERY_OPERAND`` lists the functions
whose node saves every operand (``add``, ``sub``, ``mul``, ``div`` with a list or a number, ``maximum``, ``minimum``,
``clamp_min``, ``clamp_max``, ``pow``, ``lerp`` with a list of weights, ``addcmul``, ``addcdiv``); ``lerp`` with one
number saves nothing, and the unary functions save what their per-tensor op saves (``exp`` its result, ``sin`` its
input: ``saved_table.SAVED_FOR_BACKWARD``), but in the one node, for every position: ``r = torch._foreach_exp([a,
b]); r[1].add_(1); r[0].sum().backward()`` raises in eager (checked for ``exp``, ``sigmoid``, ``sin``, ``abs``). The lookaside tags each
such call's per-tensor results; ``group_saves`` gives each per-tensor op of the call every tensor
argument of every op of the call, saved where the op is differentiable (saved_versions.py). The functions and the
tags are foreach_lookasides.py's (``SAVES_EVERY_OPERAND``, ``SAVES_TAGS``).

Not modelled: eager's outputs of a position none of whose tensors requires grad require grad too (the one node), so
a backward from only such an output runs the node in eager, and the traced op of that position carries no gradient.
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy

from fusion_alias.foreach_lookasides import SAVES_EVERY_OPERAND, SAVES_TAGS
from fusion_alias.refusals.saved_versions import saves_of

def group_saves(recorded, top_bsyms) -> dict[int, tuple[str, tuple]]:
    """Top-level index of each per-tensor op of a recorded call -> (the foreach call, every tensor argument of every
    per-tensor op of that call). ``recorded``: the recorded calls' op names (none: nothing to find); a call's ops are
    the longest run of top-level ops whose results carry one of foreach_lookasides.py's ``SAVES_TAGS``."""
    out: dict[int, tuple[str, tuple]] = {}
    if not recorded:
        return out
    runs: list[tuple[object, list[int]]] = []
    for i, b in enumerate(top_bsyms):
        tags = {t for o in b.flat_proxy_outs if isinstance(o, TensorProxy) for t in o.tags if t in SAVES_TAGS}
        if len(tags) != 1:
            continue
        (tag,) = tags
        if runs and runs[-1][0] == tag and runs[-1][1][-1] == i - 1:
            runs[-1][1].append(i)
        else:
            runs.append((tag, [i]))
    for _, indices in runs:
        operands = {}
        for i in indices:
            for a in _saved(top_bsyms[i]):
                operands.setdefault(a.name, a)
        for i in indices:
            out[i] = (f"the foreach call of {top_bsyms[i].sym.name}", tuple(operands.values()))
    return out


_EVERY = SAVES_EVERY_OPERAND | {"true_divide"}  # (the per-tensor ops' names: ``maximum`` runs as ``clamp_min``)


def _saved(b) -> list:
    """What eager's node saves of one per-tensor op ``b`` of a foreach call: every tensor argument for the functions
    of ``SAVES_EVERY_OPERAND`` (``lerp`` with a tensor weight), else what the op itself saves (``exp`` its result,
    ``sin`` its input: ``saves_of``, whatever requires grad), which the node keeps for every position."""
    name = b.sym.name
    if name in _EVERY and (name != "lerp" or (len(b.args) > 2 and isinstance(b.args[2], TensorProxy))):
        return [a for a in b.flat_proxy_args if isinstance(a, TensorProxy)]
    outs = [o for o in b.flat_proxy_outs if isinstance(o, TensorProxy)]
    found = []
    for what, _ in saves_of(name, b.args, b.kwargs):
        if what == "out":
            found += outs[:1]
        elif isinstance(b.args[what], TensorProxy):
            found.append(b.args[what])
    return found
