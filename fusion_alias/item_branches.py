"""Python decisions on a tensor's value (``x.item()`` in an ``if``, ``max``, ``int()``): refused.

Note [a branch on a value the trace does not know]
--------------------------------------------------
``x.sum().item()`` is traced as a number whose value is unknown (``prims.item``: the value exists only when the
trace runs). Thunder 0.2.6 still lets Python compare it: ``f3 = item(t2); f4 = gt(f3, 0.0)`` records the
comparison, and ``bool(f4)`` answers from a value that is None, False. So the branch taken while tracing is
fixed in the compiled function, whatever the values of later calls (hostile probe, session 25; plain
``thunder.jit`` too)::

    def f(x, y):
        x.mul_(-1)
        if x.sum().item() > 0: return y * 2   # eager: 3 on the first call, 2 on the second
        return y * 3                          # compiled: 3, then 3
    y * max(x.sum().item(), 1.0)              # eager 66, then 1; compiled 66, then -66

``float()`` of a tensor is refused by Thunder itself ("data dependency"); a number computed from ``item()``
was not. The lookasides below refuse ``bool()``, ``int()``, ``float()`` and ``index()`` of a number proxy the
trace computed from an ``item()`` (walking back through the symbols that made it), and the builtins Python runs
in C on such a number (``max``, ``min``, ``int``, ``float``, ``bool``, ``round``, ``abs``, ``sorted``). ``item()`` used as an
operand (``x * y.item()``) stays a value of the trace and runs as before. Lent to the interpreter only where
``fusion_alias.executor`` is in the executor list.
"""

from __future__ import annotations

from thunder.core.proxies import NumberProxy, Proxy
from thunder.core.trace import get_tracectx

_ITEM_IDS = frozenset({"torch.Tensor.item", "torch.item"})


class DataDependentBranchError(NotImplementedError):
    """A Python decision on a value only the running trace knows (module Note)."""


def _made_from_item(p: NumberProxy) -> bool:
    """Whether the current trace computed ``p`` from an ``item()`` (module Note)."""
    trace = get_tracectx()
    if trace is None:
        return False
    producer = {}
    for b in trace.bound_symbols:  # (the number's producers are in the trace by now)
        for o in b.flat_outs:
            if isinstance(o, Proxy):
                producer.setdefault(o.name, b)
    todo, seen = [p.name], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        b = producer.get(name)
        if b is None:
            continue
        if b.sym.id in _ITEM_IDS or getattr(b.sym, "name", None) == "item":
            return True
        todo.extend(a.name for a in b.flat_args if isinstance(a, NumberProxy))
    return False


def _guarded(conversion: str, original):
    def convert(self, *args):
        if _made_from_item(self):
            raise DataDependentBranchError(
                f"fusion_alias: {conversion}() of a number computed from a tensor's value (x.item()) inside the "
                "compiled function is not supported: Thunder 0.2.6 traces the value as unknown, so a Python "
                "decision on it (an if, a comparison, max/min, int()) would be fixed at the first call. "
                "Workaround: keep the decision in tensors (torch.where), or call .item() outside the compiled "
                "function")
        return original(self, *args)

    return convert


def _guarded_builtin(builtin):
    """``builtin`` (``max``, ``int``, ...), refused where an argument is a number made from ``item()``: Python runs
    it in C, which converts or compares the proxies without the interpreter's lookasides."""

    def call(*args, **kwargs):
        for a in args:
            for x in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(x, NumberProxy) and _made_from_item(x):
                    raise DataDependentBranchError(
                        f"fusion_alias: {builtin.__name__}() of a number computed from a tensor's value (x.item()) "
                        "inside the compiled function is not supported: Thunder 0.2.6 traces the value as unknown, so "
                        "the Python decision would be fixed at the first call. Workaround: keep it in tensors "
                        "(torch.maximum, torch.where, .to(dtype)), or call .item() outside the compiled function")
        return builtin(*args, **kwargs)

    return call


def register(executor) -> None:
    """Lend ``executor`` lookasides that refuse Python conversions of numbers made from ``item()``."""
    for name in ("__bool__", "__int__", "__float__", "__index__"):
        original = getattr(NumberProxy, name, None)
        if original is not None and original not in executor._lookasides:
            executor._lookasides[original] = _guarded(name.strip("_"), original)
    for builtin in (max, min, int, float, bool, round, abs, sorted):
        if builtin not in executor._lookasides:
            executor._lookasides[builtin] = _guarded_builtin(builtin)
