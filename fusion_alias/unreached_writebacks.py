"""Written inputs whose new value the loss never reads: eager's gradient, not ``0 * partial``.

Note [a write-back the loss does not read]
------------------------------------------
In a call that computes gradients, the final value of each written input is an output of Thunder's one autograd
node, copied into the caller's tensor (autograd_functionalize.py's ``write_back``). When the loss does not read that
tensor, PyTorch still runs the node's backward (the loss reads its other outputs) and hands it a cotangent of
zeros for the unread output; the backward multiplies those zeros by the write's partials. Eager's graph has a node
per op: the write's node is never visited, and a leaf reached only through it keeps ``grad`` None. Where a partial
is infinite the zero becomes NaN (``0 * inf``)::

    def f(a, b):                        # b = x1 * 1, x1 holds inf (fuzz --special-values --grad seed 20962 #23)
        b.mul_(b.detach())              # b's new value: nobody reads it
        return a.sin()
    f(a, b).sum().backward()            # eager: x1.grad None; was: [nan, 0, 0, 0] (t7 * zeros, t7 = b.detach())

Here each final value copied back under grad mode passes through ``_Reached`` (an identity node whose backward
notes that the loss reached it), and the call's Thunder node gets, for this call, a backward that asks which of
its final-value outputs were reached. If all were, it runs Thunder's backward as it is. Otherwise, per gradient
it returns: zeros where the gradient is computed from unreached cotangents only (eager's is None there, or zeros
where an op Thunder takes as a constant, ``t.copysign_(y)``, still sends ``y`` eager's zero gradient: Thunder's
gradient was zeros for finite values before, and stays so, without the NaN); Thunder's value
where from reached ones only, or where it holds no NaN (a zero cotangent times a finite partial is an exact
zero); else zero_cotangents.py's Note [a backward without the unread cotangents]. Which cotangents each gradient is computed from is read
off the backward trace by data flow (through the ops of each fusion, a composite whole), after Thunder's
optimization: ``record_reach`` puts that table in the trace as the context of a symbol that does nothing, so the
compiled backward carries it. Not covered: the program's own outputs, when the loss reads only some of them
(plain ``thunder.jit`` alike).

Note [an unread write into memory another input shares]
-------------------------------------------------------
Eager's graph reaches a write through memory as well as through values: a view of the written memory read after
the write has its history remade through the write's node (``CopySlices``), even where it reads other elements::

    def f(a, b):                        # a = base[0], b = base[1]: one memory
        b.exp_()
        return a * 2                    # eager: the loss reaches exp's node through base; b's leaf gets
                                        # 0 * exp(inf) = NaN, as Thunder's one backward gives it

Thunder's trace reads ``a`` as the input it is, so a watched write-back would count as unread and drop what
eager computes. A written input whose memory another input of the call shares (arguments, globals, buffers, the
tensors Thunder's prologue unpacks) is not watched: its backward is Thunder's, as before, unless no use of that
memory after its first write reaches the program's outputs (memory_reach.py, Note [an unread write into memory
another input shares, read by nothing the loss reaches]): then eager visits its writes only through the caller's
tensors after the call, and the write-backs of that memory are watched as one (``groups``): unreached only when
none of them is reached.
"""

from __future__ import annotations

import inspect

import torch
from thunder.core import prims
from thunder.core.proxies import Proxy
from thunder.core.symbol import Symbol
from thunder.core.trace import TraceProvenance, from_trace, tracectx
from thunder.executors.torch_autograd import ThunderFunction, ThunderOutputFunction

from fusion_alias.errors import AliasInputError
from fusion_alias.zero_cotangents import Unsupported, run_without

_NAME = "fusion_alias_cotangent_reach"


class _Reach:
    """The table of the module Note: per gradient the backward returns, the cotangent positions it is computed
    from (None: not told). Called, it does nothing (the trace's symbol)."""

    __slots__ = ("sources", "trace", "rewritten")

    def __init__(self, sources, trace):
        self.sources, self.trace, self.rewritten = sources, trace, {}  # (zero_cotangents.py's, per unread set)

    def __call__(self):
        return None


def _names(x) -> list[str]:
    from thunder.core.pytree import tree_flatten

    return [p.name for p in tree_flatten(x)[0] if isinstance(p, Proxy)]


def _flow(bsyms, sources: dict) -> None:
    """Add to ``sources`` (name -> frozenset of cotangent positions) what each output of ``bsyms`` is computed
    from: through the subsymbols of a fusion, each other symbol as a whole."""
    for b in bsyms:
        outs = _names(b.output)
        if not outs:
            continue
        whole = frozenset().union(*(sources.get(n, frozenset()) for n in _names((b.args, b.kwargs))))
        if getattr(b.sym, "is_fusion", False) and b.subsymbols:
            _flow(b.subsymbols, sources)
            for n in outs:
                sources.setdefault(n, whole)
        else:
            for n in outs:
                sources[n] = whole


def record_reach(trace):
    """``trace`` where it is Thunder's backward (it unpacks ``cotangents`` and returns the gradients), with the
    table of the module Note recorded in it; else ``trace`` itself."""
    bsyms = trace.bound_symbols
    unpack = next((b for b in bsyms if b.args and isinstance(b.args[0], Proxy) and b.args[0].name == "cotangents"
                   and isinstance(b.output, (tuple, list))), None)
    if unpack is None or bsyms[-1].sym.id is not prims.PrimIDs.RETURN or not bsyms[-1].args:
        return trace
    grads = bsyms[-1].args[0]
    if not isinstance(grads, (tuple, list)):
        return trace
    sources = {o.name: frozenset((i,)) for i, o in enumerate(unpack.output) if isinstance(o, Proxy)}
    _flow([b for b in bsyms[:-1] if b is not unpack], sources)
    table = _Reach(tuple(frozenset().union(*(sources.get(n, frozenset()) for n in _names(g))) if _names(g) else None
                         for g in grads), trace)
    sym = Symbol(name=_NAME, id=f"fusion_alias.{_NAME}", meta=None, is_prim=True,
                 _bind_postprocess=lambda b: setattr(b, "_call_ctx", {_NAME: table}))
    new = from_trace(trace)
    new.set_provenance(TraceProvenance("fusion_alias: which cotangents each gradient is computed from"))
    with tracectx(new):
        marker = sym.bind(output=None)
    new.bound_symbols = [*bsyms[:-1], marker, bsyms[-1]]
    return new


class _Reached(torch.autograd.Function):
    """Identity; its backward notes in ``seen`` that the loss reached output ``index`` of the node."""

    @staticmethod
    def forward(ctx, value, seen, index):
        ctx.seen, ctx.index = seen, index
        return value.view_as(value)

    @staticmethod
    def backward(ctx, grad):
        ctx.seen.add(ctx.index)
        return grad, None, None


def _fresh(saved) -> list:
    """A copy of Thunder's saved-for-backward collections (its backward empties the lists it is given)."""
    return [list(x) if isinstance(x, list) else x for x in saved]


class _Watched:
    """A Thunder node's compiled backward, for one call: module Note."""

    __slots__ = ("backward", "watched", "seen", "names", "groups")

    def __init__(self, backward):
        self.backward, self.watched, self.seen, self.names = backward, set(), set(), {}
        self.groups = {}  # output index -> the indices of its memory's write-backs (module Note, its second part)

    def __call__(self, saved, cotangents):
        unreached = frozenset(i for i in self.watched - self.seen if not self.groups.get(i, frozenset()) & self.seen)
        if not unreached:
            return self.backward(saved, cotangents)
        again, cots = _fresh(saved), list(cotangents)
        grads = self.backward(saved, cotangents)
        table = getattr(inspect.unwrap(self.backward), "__globals__", {}).get(_NAME)  # (under Thunder's decorators)
        sources = table.sources if isinstance(table, _Reach) and len(table.sources) == len(grads) else None
        out = list(grads)
        for k, g in enumerate(out):
            came = sources[k] if sources is not None else None
            if not isinstance(g, torch.Tensor) or came is not None and not came & unreached:
                continue
            if came and came <= unreached:
                out[k] = torch.zeros_like(g)  # (eager's None, or the zeros of an op Thunder takes as a constant)
            elif g.is_floating_point() and bool(g.isnan().any()):  # Note [a backward without the unread cotangents]
                try:
                    exact = run_without(table, again, cots, unreached)
                    return tuple(torch.zeros_like(g) if e is None and isinstance(g, torch.Tensor) else e
                                 for e, g in zip(exact, grads))
                except Unsupported as e:
                    raise AliasInputError(
                        "fusion_alias: a gradient of this call is NaN where it is computed both from outputs the "
                        f"loss reads and from the new value of a written input it does not read ({self._unread(unreached)}"
                        "): Thunder's one backward multiplies the zero it gets for the unread value by the write's "
                        "partials (0 * inf is NaN where eager's backward never visits the write), and the backward "
                        f"without it could not be made ({e}). Not supported: make the loss read the written input "
                        "(e.g. + 0 * b.sum()), or write it under torch.no_grad()") from None
        return tuple(out)

    def _unread(self, unreached) -> str:
        return ", ".join(sorted(self.names.get(i, f"output {i}") for i in unreached))


def _thunder_node(value: torch.Tensor):
    """The ThunderFunction node behind ``value``, an output of Thunder's autograd node(s), and the position of
    ``value`` among that node's outputs; None where ``value`` is no such output."""
    fn = value.grad_fn
    cls = getattr(fn, "_forward_cls", None)
    if cls is ThunderOutputFunction:
        first = fn.next_functions[0][0] if fn.next_functions else None
        if getattr(first, "_forward_cls", None) is ThunderFunction:
            return first, value.output_nr
        return None
    if cls is ThunderFunction:
        return fn, value.output_nr
    return None


def _shares_memory_with_another(tensor: torch.Tensor, inputs) -> bool:
    """Whether ``tensor``'s storage is that of two or more of the call's tensor ``inputs`` (itself among them)."""
    if tensor.layout != torch.strided:
        return True
    ptr = tensor.untyped_storage().data_ptr()
    return sum(1 for t in inputs if isinstance(t, torch.Tensor) and t.layout == torch.strided
               and t.untyped_storage().data_ptr() == ptr) > 1


def watched(finals, targets, inputs, apart=()) -> list:
    """``finals``, each one copied back under grad mode (``targets``: (caller's tensor, grad mode)) that is an
    output of Thunder's node passed through ``_Reached``, its node's backward watched for this call (module
    Note); ``inputs``: the call's tensor inputs (Note [an unread write into memory another input shares]);
    ``apart``: memory_reach.py's ``dropped_with`` per final value."""
    found = []
    for k, value in enumerate(finals):
        tensor, mode = targets[k] if k < len(targets) else (None, False)
        found.append(_thunder_node(value) if mode and isinstance(value, torch.Tensor) and value.requires_grad
                     else None)
    out = []
    for k, value in enumerate(finals):
        group = None
        if found[k] is not None and _shares_memory_with_another(targets[k][0], inputs):
            group = apart[k] if k < len(apart) else None
            if group is None or not all(j < len(found) and found[j] is not None and found[j][0] is found[k][0]
                                        for j in group):
                group = None  # (a write-back of that memory not on this node: not told whether it is reached)
            if group is None:
                out.append(value)
                continue
        if found[k] is None:
            out.append(value)
            continue
        node, index = found[k]
        watch = node.compiled_backward
        if not isinstance(watch, _Watched):
            watch = node.compiled_backward = _Watched(watch)
        watch.watched.add(index)
        if group is not None:
            watch.groups[index] = frozenset(found[j][1] for j in group)
        watch.names[index] = f"written input {k}"
        with torch.enable_grad():
            out.append(_Reached.apply(value, watch.seen, index))
    return out
