"""Where eager copies and where it returns its input, in the functional program of a call that computes
gradients (autograd_functionalize.py): reshapes that copy get a clone before them, and each ``.contiguous()``
is eager's copy or eager's input itself, decided from the call's layouts as the fusion pass decides it
(layouts.py, Note [contiguous() of an intermediate is itself where eager's layout is contiguous]).
"""

from __future__ import annotations

import torch
import thunder.core.prims as prims
from thunder.core.proxies import ProxyTag, TensorProxy
from thunder.core.trace import tracectx

from fusion_alias import ops
from fusion_alias.eager_result_layouts import result_symbols
from fusion_alias.layout_checks import ViewLayoutError
from fusion_alias.layouts import _CONTIGUOUS, _contiguous_calls, _memory_format


def clone_before(flat: list, copied: set, trace) -> list:
    """``flat`` with a clone before each view whose output is in ``copied`` (a reshape that copies)."""
    if not copied:
        return flat
    out = []
    for b in flat:
        if ops.is_view(b) and isinstance(b.output, TensorProxy) and b.output.name in copied:
            x = b.args[0]
            with tracectx(trace):
                fresh = TensorProxy(like=x)
                fresh.tags.update(b.output.tags & {ProxyTag.DETACHED_AUTOGRAD_GRAPH})  # Note [a copying reshape made under no_grad] (refusals/no_grad_copies.py)
                out.append(prims.clone.bind(x, output=fresh))
            b = b.from_bsym(args=(fresh, *b.args[1:]))
        out.append(b)
    return out


def _is_contiguous_call(b) -> bool:
    return (b.sym.name == _CONTIGUOUS and bool(b.args) and isinstance(b.args[0], TensorProxy)
            and isinstance(b.output, TensorProxy))


def eager_contiguous(trace, full: list, actual: dict, traced) -> dict[str, str]:
    """Note [contiguous() with gradients, as eager answers it]
    --------------------------------------------------------
    With gradients, ``contiguous`` was kept whole: an op that may return a view of its input (its answer
    follows the layout), whose result the rewrite could not relate to its input's memory. So the most
    common spelling of a copy before an in-place op was refused whenever the input was read after it::

        t = a.t().contiguous()     # eager: a copy (a.t() is not contiguous)
        t.tanh_()                  # writes t's memory only
        return a.sum() + t.sum()   # refused: "a is read after a write into memory it shares ..."

    The fusion pass decides each call from the call's layouts (layouts.py, ``_contiguous_calls``); the
    same decision, made on the trace flattened the fusion pass's way (``full``), says here, per result
    name, ``"copy"`` (eager copies) or ``"self"`` (eager returns its input, and the run-time layout is
    contiguous too). A call it cannot decide, or decides unsafely, is left out: it stays whole, as before.
    ``actual``: trace input name -> the call's tensor; ``traced``: the program as traced."""
    at = [i for i, b in enumerate(full) if _is_contiguous_call(b)]
    if not at or not actual:
        return {}
    try:  # (nothing counts as written: an undecided call is left whole, not refused, here)
        decided = _contiguous_calls(trace, full, at, actual, lambda name: False, {}, result_symbols(trace, traced))
    except ViewLayoutError:
        return {}
    answers = {}
    for i in at:
        sym_id = decided[i].sym.id
        if sym_id is prims.PrimIDs.CLONE:
            answers[full[i].output.name] = "copy"
        elif sym_id is prims.PrimIDs.SHALLOW_COPY:
            answers[full[i].output.name] = "self"
    return answers


def contiguous_as_eager(flat: list, answers: dict[str, str]) -> list:
    """``flat`` with each ``contiguous`` of ``answers`` (:func:`eager_contiguous`) made what eager does: its
    ``stride_order`` (a contiguous copy, new memory, the identity gradient) where eager copies, a
    ``shallow_copy`` (the same memory) where eager returns its input. Only the plain memory format: a
    channels_last ``stride_order`` runs as torch's ``contiguous``, which may return its input."""
    if not answers:
        return flat
    out = []
    for b in flat:
        answer = answers.get(b.output.name) if _is_contiguous_call(b) else None
        if answer == "self":
            b = prims.shallow_copy.bind(b.args[0], output=b.output)
        elif (answer == "copy" and _memory_format(b) is torch.contiguous_format and len(b.subsymbols) == 1
              and b.subsymbols[0].sym.id is prims.PrimIDs.STRIDE_ORDER and b.subsymbols[0].output is b.output):
            b = b.subsymbols[0]
        out.append(b)
    return out
