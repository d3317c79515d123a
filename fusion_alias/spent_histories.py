"""Inputs whose autograd history runs through an earlier call's backward, which already ran.

Note [a history through a backward that already ran]
---------------------------------------------------
Thunder connects a call to autograd with one node (``ThunderFunction``, and
``ThunderOutputFunction`` for the outputs) that has an edge to *every* input that
requires grad, whether or not the outputs the loss reads depend on it; and
``.backward()`` runs every node reachable from the loss (an input no gradient
reaches is sent a zero). That node runs its backward once: its saved tensors are
freed after it. Eager's graph has a node per op, and the loss reaches only what
it depends on.

A call that writes module state from values that require grad leaves the state
with a history through its node (``write_back`` copies under grad mode, to keep
eager's ``requires_grad``: autograd_functionalize.py, Note [a write-back no
gradient reaches])::

    def step(m, a):
        m.ema.mul_(0.9).add_(m.p, alpha=0.1)   # ema: CopyBackwards -> call 1's node
        return (a * 2).tanh()

    step(m, a1).sum().backward()   # call 1's node runs its backward
    step(m, a2).sum().backward()   # call 2's node has an edge to ema, so to call 1's
                                   # node, run again: "Trying to backward through the
                                   # graph a second time"; eager: fine (no loss reads ema)

(fuzz seed 60002 #10 and #37, modules --grad; plain ``thunder.jit`` does not
raise, its ``ema`` never requires grad, unlike eager's.) So the forward hands
Thunder's node, in place of an input whose history reaches a Thunder node that
already ran its backward, the same memory with that history cut: a view of a
detached leaf, through ``_CutHistory``, which passes no gradient on. A gradient
that reaches it is zero where no output the loss reads depends on the input, as
above: eager's backward never visits that history (or, for a loss that reads it
times zero, sends zeros there: the leaves behind it get a ``.grad`` of zeros
where ours may stay None). A non-zero one would have to run through the spent
node, which cannot run again: it raises an ``AliasInputError`` naming the input,
instead of being dropped.

It is done in Thunder's forward trace (``FunctionalizeForAutograd``'s
``transform_trace_post_optimization``): a last symbol before the return passes
the ``flat_args`` Thunder connects to autograd through ``_cut_spent_histories``,
on the compiling call as on the cached ones. Per input that has a history, the
walk goes through eager's nodes and stops at each Thunder node: a spent one
cuts, one not yet run is left as it is (its call's inputs were looked at when it
ran). Not caught: a Thunder node spent after a later call used its results
(call 1, call 2, the backward of call 1's loss alone, then call 3), or one
further back than ``_MAX_WALK`` eager nodes: PyTorch's error, as before.
"""

from __future__ import annotations

import torch
from thunder.core import prims
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol
from thunder.core.trace import TraceProvenance, from_trace, tracectx
from thunder.executors.torch_autograd import ThunderFunction, ThunderOutputFunction

from fusion_alias.errors import AliasInputError

_THUNDER_NODES = (ThunderFunction, ThunderOutputFunction)


def _spent(node) -> bool:
    """Whether an autograd node has run its backward (its saved tensors are freed), without unpacking them."""
    try:
        node._raw_saved_tensors
    except RuntimeError:
        return True
    return False


# The walk runs on every call, per input with a history: an input computed by a long eager graph (an eager
# model feeding a jitted loss) would be walked whole each time. Past this many nodes it stops and leaves the
# input as it is (a spent node behind it then gives PyTorch's error, loud, as before this module).
_MAX_WALK = 256


def reaches_spent_thunder_node(grad_fn) -> bool:
    """Whether the history ``grad_fn`` starts runs through a Thunder node that already ran its backward,
    through eager's nodes only (module Note)."""
    stack, seen = [grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        if len(seen) >= _MAX_WALK:  # (a long eager history before the call: left as it is, PyTorch's error if spent)
            return False
        seen.add(node)
        if getattr(node, "_forward_cls", None) in _THUNDER_NODES:
            if _spent(node):
                return True
            continue
        stack.extend(fn for fn, _ in node.next_functions)
    return False


class _CutHistory(torch.autograd.Function):
    """A view of a detached leaf, for Thunder's node to connect to instead of a spent history."""

    @staticmethod
    def forward(ctx, leaf, name):
        ctx.set_materialize_grads(False)
        ctx.name = name
        return leaf.view_as(leaf)

    @staticmethod
    def backward(ctx, grad):
        if grad is not None and bool(grad.ne(0).any()):
            raise AliasInputError(
                f"fusion_alias: the backward reaches the input {ctx.name} of a call, whose autograd history runs "
                "through an earlier call whose backward already ran (state written from values that require grad, "
                "e.g. buf.mul_(0.9).add_(p), then read by a later call's loss): Thunder runs each call's backward "
                "once, so the gradient eager sends through that earlier call is not supported; write such state "
                "under torch.no_grad() or from detached values")
        return None, None


def _cut_spent_histories(names, *tensors):
    """``tensors``, each one whose history reaches a spent Thunder node replaced by ``_CutHistory``'s view."""
    out = []
    for name, t in zip(names, tensors):
        if isinstance(t, torch.Tensor) and t.grad_fn is not None and reaches_spent_thunder_node(t.grad_fn):
            with torch.enable_grad():  # (the forward runs under no_grad)
                t = _CutHistory.apply(t.detach().requires_grad_(), name)
        out.append(t)
    return tuple(out)


_CUT = Symbol(name="fusion_alias_cut_spent_histories", id="fusion_alias.cut_spent_histories", meta=None,
              is_prim=True,
              _bind_postprocess=lambda b: setattr(b, "_call_ctx", {"fusion_alias_cut_spent_histories": _cut_spent_histories}))


def cut_spent_histories(trace):
    """``trace`` where it is Thunder's forward (its return holds the ``flat_args`` Thunder connects to
    autograd), with those arguments passed through ``_cut_spent_histories`` first; else ``trace`` itself.
    An argument the forward also returns as an output stays (PyTorch tells such an output by identity)."""
    ret = trace.bound_symbols[-1] if trace.bound_symbols else None
    if ret is None or ret.sym.id is not prims.PrimIDs.RETURN or not ret.args:
        return trace
    data = ret.args[0]  # return {'output': ..., 'flat_args': [...], 'flat_output': ...}, saved_for_backward
    if not isinstance(data, dict) or "flat_args" not in data:
        return trace
    returned = {o.name for o in data.get("flat_output", ()) if isinstance(o, TensorProxy)}
    args = [a for a in data["flat_args"]
            if isinstance(a, TensorProxy) and a.requires_grad and a.name not in returned]
    if not args:
        return trace
    new = from_trace(trace)
    new.set_provenance(TraceProvenance("fusion_alias: inputs' histories through a spent backward cut"))
    with tracectx(new):
        cut = tuple(TensorProxy(like=a) for a in args)
        bsym = _CUT.bind(tuple(a.name for a in args), *args, output=cut)
    by_name = {a.name: c for a, c in zip(args, cut)}
    flat_args = [by_name.get(a.name, a) if isinstance(a, TensorProxy) else a for a in data["flat_args"]]
    new.bound_symbols = [*trace.bound_symbols[:-1], bsym, ret.from_bsym(args=({**data, "flat_args": flat_args}, *ret.args[1:]))]
    return new
