"""``a is b`` on two tensors of a traced program, answered as eager answers it where the trace tells.

Note [tensor identity in a trace]
---------------------------------
Thunder's interpreter runs the program's ``is`` (the ``IS_OP`` instruction) on its proxies, and a
proxy is a value, not eager's tensor object. Two ways it answered False where eager says True
(session 17 hand probe; plain ``thunder.jit`` too):

* an in-place op returns its own tensor: after ``y = x.add_(1)``, ``y is x``. The trace names the
  ``copy_``'s result ``t1``, a proxy of its own;
* the same tensor passed twice: ``f(x, x)`` with ``x is y`` in ``f``. The interpreter makes a proxy
  per argument (the computation merges them later), so ``x is y`` compared ``t_0`` with ``t_1``.

The first is a fact of the trace: an in-place method (its symbol's name ends in ``_``: ``add_``,
``copy_``, fusion_alias's ``sigmoid_``) returns its first argument, so each operand is followed back
through such results first, and two that reach the same proxy are one tensor. The second is not
answered here (docs/limits.md): the compiled program is shared by every call of one aliasing
(``guard.py``), ``f(x, x)`` and ``f(x, x.view(2))`` alike, where eager answers True and False, and
refusing it would refuse ``attn(x, x, x)`` of a module that asks ``query is key`` for a fast path of
the same value (``nn.MultiheadAttention``). Two module parameters tied to one tensor are the same case.
Other tensors eager may return as themselves (``x.contiguous()`` of a contiguous ``x``,
``x.to(x.dtype)``) keep Thunder's answer too.

The handler replaces Thunder's ``IS_OP`` handler and hands every other case to it; outside a call of
``fusion_alias.jit`` (``context.current().has_call`` False) it is Thunder's.
"""

from __future__ import annotations

import thunder.core.interpreter as interpreter
from thunder.core.proxies import TensorProxy
from thunder.core.trace import get_tracectx

from fusion_alias import context


def _returns_its_first_argument(bsym) -> bool:
    """An in-place method: eager returns the tensor it was called on (Note [tensor identity in a trace])."""
    name = bsym.sym.name
    return (name.endswith("_") and not name.startswith("_") and bool(bsym.args)
            and isinstance(bsym.args[0], TensorProxy) and isinstance(bsym.output, TensorProxy))


def _tensor_of(p: TensorProxy, producers: dict) -> TensorProxy:
    """``p`` followed back through in-place results to the tensor eager returns."""
    for _ in range(len(producers) + 1):
        bsym = producers.get(p.name)
        if bsym is None or not _returns_its_first_argument(bsym):
            return p
        p = bsym.args[0]
    return p


def same_tensor(a: TensorProxy, b: TensorProxy) -> bool:
    """Eager's ``a is b`` for two proxies of the trace being recorded, as far as the trace tells
    (Note [tensor identity in a trace])."""
    if a is b:
        return True
    producers = {}
    trace = get_tracectx()
    for bsym in trace.bound_symbols if trace is not None else ():
        out = bsym.output
        if isinstance(out, TensorProxy):
            producers[out.name] = bsym
    a, b = _tensor_of(a, producers), _tensor_of(b, producers)
    if a is b or a.name == b.name:
        return True
    return False


_thunder_is_op = interpreter._default_opcode_handler_map["IS_OP"]


def _is_op(inst, /, stack, **kwargs):
    b, a = stack[-1], stack[-2]
    if (type(a) is TensorProxy or isinstance(a, TensorProxy)) and isinstance(b, TensorProxy) \
            and context.current().has_call:
        same = same_tensor(a, b)
        stack.pop()
        stack.pop()
        stack.append(not same if inst.arg == 1 else same)
        return None
    return _thunder_is_op(inst, stack=stack, **kwargs)


def register() -> None:
    """Answer ``IS_OP`` on tensors as eager does, in calls of ``fusion_alias.jit``."""
    interpreter._default_opcode_handler_map["IS_OP"] = _is_op
