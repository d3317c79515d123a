"""Outputs eager returns as one tensor object, in a call that computes gradients and writes in place.

Note [outputs that are one tensor in eager]
-------------------------------------------
An in-place op returns the tensor it was called on, so eager may return one tensor object at two places::

    def f(x, w):
        y = x + w
        return y.exp_(), y          # eager: out[0] is out[1]

    a, b = fusion_alias.jit(f)(x_leaf * 1, w)
    a.add_(1)                       # eager: b sees it (it is a)

The trace names the two differently (``t2 = copy_(t1, y)``; ``y``). Functionalized before Thunder's
autodiff (autograd_functionalize.py), both read the final value of ``y``'s memory, and Thunder's
computation returns each proxy once, so the second got an identity copy of its own: two tensors with
eager's values but not one memory, and a write into one after the call missed the other, silently
(session 30 probe; plain ``thunder.jit`` returns one tensor there). The same for ``c.float()`` of a float
``c`` beside ``c``, and for ``torch.add(a, b, out=y)`` beside ``y``.

Which outputs are one object is a fact of the program as traced: an in-place method or an ``out=``
function returns its tensor, and so does a conversion the trace shows changes nothing
(tensor_identity.py, Note [conversions that return their own tensor]). Outputs that lead back to one
proxy through such results are handed the first one's tensor by the epilogue. Gradients are unchanged:
both carry the final value of one memory, and the other Function output, now unused, gets a zero
cotangent. Outputs that are views of one memory (``y``, ``y[0]``) are not one object in eager either and are
left as Thunder's Function returns them (a write into them after the call raises PyTorch's error).

The converse, one object where eager has two: ``y.copy_(w)`` makes ``w`` the value of ``y``'s memory, so
``return y.copy_(w)`` (or ``y`` after it) returned the caller's ``w`` itself, and a write into the output
after the call wrote ``w`` (eager's ``w`` is untouched; plain ``thunder.jit`` too was right). So did ``y[0]``, ``y.t()``
after it, and ``y.copy_(w.t())`` or ``y.copy_(w.detach())``: views of ``w``. An output whose value is an
input's own tensor or a view of it, while its memory in eager is not that input's, is returned as a copy
(``not_the_callers``).
"""

from __future__ import annotations

import thunder.core.prims as prims
from thunder.core.proxies import TensorProxy

from fusion_alias import ops
from fusion_alias.tensor_identity import _returns_its_first_argument, is_its_operand


def _returned_operand(bsym):
    """The operand eager returns as ``bsym``'s result itself, or None."""
    if bsym.sym.id is prims.PrimIDs.COPY_:  # (a bare copy_: source first, destination second)
        dst = bsym.args[1] if len(bsym.args) > 1 else None
        return dst if isinstance(dst, TensorProxy) else None
    if _returns_its_first_argument(bsym) or is_its_operand(bsym):
        return bsym.args[0]
    return None


def same_object_outputs(traced, ret) -> dict[int, int]:
    """Per output position whose tensor eager returns at an earlier position too: that position.
    ``traced``: the program's own symbols; ``ret``: its return symbol (the computation's flat outputs)."""
    outputs = ret.args[0]["output"] if isinstance(ret.args[0], dict) else ret.args[0]
    if not isinstance(outputs, (tuple, list)):
        return {}
    leads_to: dict[str, str] = {}
    for b in traced:
        operand = _returned_operand(b)
        out = b.output
        if operand is not None and isinstance(out, TensorProxy):
            leads_to[out.name] = leads_to.get(operand.name, operand.name)
    first: dict[str, int] = {}
    same: dict[int, int] = {}
    for j, o in enumerate(outputs):
        if not isinstance(o, TensorProxy):
            continue
        tensor = leads_to.get(o.name, o.name)
        if tensor in first:
            same[j] = first[tensor]
        else:
            first[tensor] = j
    return same



def not_the_callers(values, outs, info, input_names, emitted) -> list:
    """``values`` (what the functionalized program returns for the traced outputs ``outs``), each one that is an
    input's own tensor or a view of it (through the symbols ``emitted`` so far) while its output's memory is not
    that input's replaced by a copy (Note [outputs that are one tensor in eager])."""
    of_input = {n: n for n in input_names}
    for b in emitted:
        if not (ops.is_view(b) or b.sym.name == "detach"):
            continue
        first = next((a for a in b.flat_args if isinstance(a, TensorProxy)), None)
        if first is not None and first.name in of_input:
            for o in b.flat_outs:
                if isinstance(o, TensorProxy):
                    of_input[o.name] = of_input[first.name]
    out = []
    for v, o in zip(values, outs):
        inp = of_input.get(v.name) if isinstance(v, TensorProxy) else None
        if (inp is not None and isinstance(o, TensorProxy) and o.name in info.root
                and info.group(inp) != info.group(o.name)):
            v = prims.clone(v)
        out.append(v)
    return out
