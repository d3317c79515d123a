"""Refusals in calls that compute gradients: what eager's autograd rejects about in-place writes.

Two checks, both on the user-level trace (the ops as the user called them), in program order:

* Note [tensors saved for the backward, then written]: eager's saved-tensor version check;
* Note [writes into views from ops that return several views]: ``unbind``/``chunk``/``split``.

``check_saved_versions`` runs only for calls that compute gradients (``check_refusals`` is told so by
``autograd_functionalize``), and costs one walk over the trace's top-level symbols.
"""

from __future__ import annotations

from thunder.core.proxies import ProxyTag, TensorProxy
import thunder.core.dtypes as dtypes
import thunder.core.prims as prims

from fusion_alias.aliasing import AliasInfo, copies_in, proxy_args, tensor_outs
from fusion_alias.errors import AliasInputError
from fusion_alias.gather_views import is_gather_view
from fusion_alias.gradient_operands import NO_GRADIENT, gradient_operands
from fusion_alias.refusals.live_backward import live_ops, written_by
from fusion_alias.refusals.no_grad_copies import is_no_grad_contiguous_copy, refuse_no_grad_contiguous_output
from fusion_alias.refusals.view_errors import (
    refuse_multi_output_write, refuse_no_grad_view_output, refuse_no_grad_view_read, refuse_no_grad_view_write)
from fusion_alias.refusals.version_counters import version_counters
from fusion_alias.refusals.untracked_saves import UNTRACKED_SAVE_OPS, UNTRACKED_SAVES, refuse_untracked_save
from fusion_alias.refusals.saved_table import _ANY, SAVED_FOR_BACKWARD


# Note [tensors saved for the backward, then written]
# ---------------------------------------------------
# Eager's autograd saves some tensors for the backward (``exp`` its result, ``amax``
# its input and result, ``x * w`` each operand when the other requires grad) together
# with the version counter they had then. Every in-place write bumps the counter of
# the memory it writes, under ``no_grad`` too, and all views of one base share one
# counter. When the backward unpacks a saved tensor whose counter moved, eager
# raises "one of the variables needed for gradient computation has been modified by
# an inplace operation". fusion_alias functionalizes the call before Thunder's
# autodiff (``autograd_functionalize.py``), so it would return the gradient of the
# functional program instead. Worked example (hostile11 T25)::
#
#     e = (s - s.amax(-1, keepdim=True)).exp()   # exp saves e, at version 0
#     e.div_(e.sum(-1, keepdim=True))            # writes e: version 1
#     return e                                   # backward: ExpBackward0 finds version 1, raises
#
# The rule, as checked here: a tensor T is *saved* by an op when the op runs under
# grad mode, the op is in ``SAVED_FOR_BACKWARD`` for the tensor arguments and ranks it
# got, and one of the arguments the entry lists as ``needs`` requires grad. The
# memory of T (its alias root; trace inputs that overlap count as one) is
# *written after the save* when a later write (or the op's own write, for a saved
# argument of an in-place op: ``x.mul_(x)``) lands in it. The call is refused when
# such a saving op's *backward runs*: its result reaches, through ops that carry a
# gradient (floating results computed under grad mode from something that
# requires grad), a returned tensor. A result that reaches only the final value of a
# written input is let through: eager raises only if the caller's backward goes
# through that input's new history (``z = x * y; x.copy_(z); return y * y`` runs when
# only the returned value is differentiated: tests/test_autograd.py). So
# ``y = x + 1; x.add_(1)`` (add saves nothing), ``h = x * 2; h.add_(1)`` (a number
# operand: nothing saved), ``e = x.exp(); e.add_(1); return x * 2`` (exp's backward
# never runs) and ``e = x.exp().clone()`` before the write all run.
#
# The table is data, derived in eager (``tests/test_saved_versions.py`` re-derives every
# entry: modify each argument and the result after the op, run the backward, see
# whether it raises, for every set of arguments that require grad, in contiguous and
# transposed layouts). A save that depends on the layout (``matmul`` of a 3-d and a 2-d
# tensor folds the first with ``reshape``, which copies a transposed one) is left out.
# An op the table does not list is taken to save nothing: a missed rejection is
# better than refusing a program eager runs. Not covered: a write in a *later* call
# into memory this call saved (a KV cache written by the next decode step before one
# backward over all steps): that write is not in this trace.

# The table (which op saves what, derived in eager) is refusals/saved_table.py.


# Note [conj of a detached tensor is detached]: ``x.conj()`` (of a real ``x``: ``x`` itself; of a complex one: a view
# with the conjugate bit) and ``resolve_conj`` of a detached tensor give a tensor that requires no
# grad, as a view of it does. Not so read, ``with torch.no_grad(): t = a.detach().conj().view(-1)`` then
# ``t.copy_(c)`` of a ``c`` that requires no grad was refused saying eager raises ("A view was created in no_grad
# mode ..."), where eager runs it (fuzz ``--generator dtype --grad`` seed 40162 #57)
_SAME_TENSOR_OPS = frozenset({"conj", "resolve_conj"})


def saves_of(name: str, args, kwargs=None) -> tuple:
    """The ``(saved, needs)`` pairs of ``SAVED_FOR_BACKWARD`` for an op ``name`` called with ``args``
    (an in-place op by its name with ``_``; ``einsum`` with its equation), or ``()`` when unknown."""
    positions = tuple(i for i, a in enumerate(args) if isinstance(a, TensorProxy))
    if name == "einsum" and args and isinstance(args[0], str):
        name = "einsum:" + args[0].replace(" ", "")
    ranks = tuple(args[i].ndim for i in positions)
    dim = args[1] if len(args) > 1 else (kwargs or {}).get("dim")
    if name in ("median", "nanmedian") and dim is not None:
        return ()  # (over a dim: its indices only)
    found = SAVED_FOR_BACKWARD.get((name, positions, ranks))
    if found is None:
        found = SAVED_FOR_BACKWARD.get((name, positions, _ANY))
    if found is None:  # (untracked_saves.py, Note [saves eager's version check does not track])
        found = UNTRACKED_SAVES.get((name, positions, _ANY), ())
    return found


# Note [writes into views from ops that return several views]
# -----------------------------------------------------------
# ``unbind``, ``chunk``, ``split`` and ``split_with_sizes`` return several views of
# one base, made under grad mode. Eager refuses an in-place write into any of them
# (or a view of one) under grad mode when the view or the value written requires
# grad: "Output 1 of UnbindBackward0 is a view and is being modified inplace. This
# view is the output of a function that returns multiple views." (hostile11 T55)::
#
#     r0, r1, r2 = (x @ w).unbind(0); r1.mul_(2)     # raises at the write
#
# The functional program would run it. Not refused (eager runs them, checked):
# ``tensor_split`` and ``unsafe_split`` outputs, a write under ``no_grad``, a write
# of a value that requires no grad into views of a base that requires none, and a
# write into a clone of such a view.
MULTI_OUTPUT_VIEWS = frozenset({"unbind", "chunk", "split", "split_with_sizes"})


def _views_only():
    """Symbols whose result is a view of their first argument: torch's, and the view prims a property traces
    to directly (``a.mT``, ``a.T`` are ``prims.transpose`` in the trace: a ``detach()`` of one, returned, passed the
    argument a gradient, fuzz seed 27005 #22, ``order --grad``)."""
    import thunder.torch as ltorch

    return frozenset(ltorch._syms_returning_views) | frozenset(
        {prims.transpose, prims.squeeze, prims.slice_prim, prims.broadcast_in_dim, prims.shallow_copy})


def _views_maybe():
    """Ops that return a view or a copy (``reshape``, ``flatten``): of a detached tensor, either carries no gradient
    (``t0.detach().reshape(3, 1, 4)`` returned was taken to start a backward: fuzz seed 20525 #91, basic --grad)."""
    import thunder.torch as ltorch

    return frozenset(ltorch._syms_that_may_return_views) | frozenset({prims.reshape})


class _Save:
    __slots__ = ("memory", "at", "index", "op", "name")

    def __init__(self, memory, at, index, op, name):
        self.memory, self.at, self.index, self.op, self.name = memory, at, index, op, name


def check_saved_versions(top_bsyms, info: AliasInfo, tensor_inputs, input_groups, renamed=None, selves=None,
                         counter_groups=(), foreach_saves=None) -> None:
    """Raise ``AliasInputError`` for the first program of the module's two Notes among ``top_bsyms``
    (the trace before flattening, the ops as the user called them). ``info``: the alias analysis of
    the flattened trace (its roots name the memories, and views of one root share a version
    counter); ``input_groups``: groups of trace-input names that may overlap. ``renamed``: the names
    flattening replaced (an ``update_aliases`` output, ``t1 = h.copy_(h)``) -> the name kept: ``info`` knows
    only the latter (``h.copy_(h) * 1`` after ``h = x.sigmoid()`` read ``t1`` as memory of its own, and the
    stale save went unseen; hostile probe 14). ``selves``: each ``contiguous()`` result eager returns as its input
    itself -> that input (eager_copies.py): the same tensor, memory and version counter (``y = b.sin();
    b.contiguous().mul_(2)`` raises at backward in eager, and returned a gradient; so did ``b.ravel()``).
    ``counter_groups``: groups of trace-input names that share a storage, overlapping or not: one version counter
    each (Note [one version counter per storage]). ``foreach_saves``: top-level index -> (op, tensors) its eager
    node saves besides its own (refusals/foreach_saves.py, Note [an out-of-place foreach function saves every
    operand])."""
    root = info.root
    selves = selves or {}
    renamed = renamed or {}
    canon: dict[str, str] = {}
    for group in input_groups:
        names = [root.get(n, n) for n in group]
        for n in names[1:]:
            canon[n] = names[0]

    gathered: dict[str, str] = {}  # a diagonal's result -> its input's memory (a view in eager; here, a gather)

    def memory_of(name: str) -> str:
        name = renamed.get(name, name)
        r = root.get(name, name)
        if r in gathered:  # (``t0.diagonal(-1).add_(0.5)`` after ``t0 = a.tanh()`` ran: fuzz seed 42013 #15, train --grad)
            return gathered[r]
        while r in selves:
            r = root.get(selves[r], selves[r])
        return canon.get(r, r)

    def memory(p) -> str:
        return memory_of(p.name)

    counter = version_counters(memory_of, counter_groups)

    rg_memory = {memory(p) for p in tensor_inputs if p.requires_grad}
    input_memory = frozenset(rg_memory)  # (returned_views.py, Note [a view made under no_grad, returned]: of an argument only)
    detached: dict = {}  # a detached name -> the detach() result it is (a view of): Note [one detach, one tensor]
    detached_writes: set = set()  # top-level indices of in-place ops that write only through detached names
    written_with_grad: set = set()  # detach() results a differentiable in-place op writes (through a view)
    multi: set = set()
    no_grad_views: dict[str, int] = {}  # Note [writes into views made under no_grad]: name -> writes of its memory then
    made_without_grad: set = set()  # results of ops under no_grad: no gradient goes through them
    no_grad_copies: set = set()  # Note [a contiguous copy made under no_grad, returned] (no_grad_copies.py)
    views, maybe_views = _views_only(), _views_maybe()
    detaching_views = views | maybe_views

    # Note [a result computed from no gradient starts no backward] (live_backward.py); an argument that does not
    # require grad is such a name too, though it shares memory with one that does (``a = m.w.detach()[0:3]`` beside
    # ``k = m.w[1]``: ``a * k.detach()`` saves nothing, and a later write of ``m.w`` was refused saying eager
    # raises; fuzz seed 26003 #119, modules --grad)
    gradless: set = {p.name for p in tensor_inputs if not p.requires_grad}
    grad_written: set = set()  # memories a differentiable in-place op writes, through any name

    def requires(p) -> bool:
        return (isinstance(p, TensorProxy) and p.name not in detached and memory(p) in rg_memory
                and (p.name not in gradless or memory(p) in grad_written))

    writes: dict[str, list] = {}  # memory -> [(index, op name)] of each write, in program order
    saves: list[_Save] = []
    flows: dict[int, bool] = {}  # top-level index -> whether a gradient goes through it
    n = len(top_bsyms)
    def check_no_grad_view_reads(b) -> None:
        if _starts_no_backward(b):  # Note [reads that ask eager's autograd nothing]
            return
        for a in proxy_args(b):
            if (isinstance(a, TensorProxy) and a.name in no_grad_views and requires(a)
                    and len(writes.get(counter(a), ())) > no_grad_views[a.name]):
                refuse_no_grad_view_read("the return" if b.sym.id is prims.PrimIDs.RETURN else b.sym.name, a.name)

    for i, b in enumerate(top_bsyms):
        if b.sym.id is prims.PrimIDs.RETURN:
            check_no_grad_view_reads(b)
            for a in proxy_args(b):  # (returned_views.py, Note [a view made under no_grad, returned])
                if (isinstance(a, TensorProxy) and a.name in no_grad_views and requires(a) and memory(a) in input_memory
                        and dtypes.is_inexact_dtype(a.dtype)):
                    refuse_no_grad_view_output(a.name)
                if isinstance(a, TensorProxy) and a.name in no_grad_copies:
                    refuse_no_grad_contiguous_output(a.name)
            n = i
            break
        if b.sym.id is prims.PrimIDs.UNPACK_TRIVIAL:
            continue
        outs = tensor_outs(b)
        copies = copies_in(b) if b.subsymbols or b.sym.id is prims.PrimIDs.COPY_ else ()
        if b.sym.id is prims.PrimIDs.COPY_:
            copies = (b,)
        grad = not any(ProxyTag.DETACHED_AUTOGRAD_GRAPH in o.tags for o in outs) and all(
            c.kwargs.get("grad_enabled", True) for c in copies
        )
        if grad and b.sym.name != "detach":
            check_no_grad_view_reads(b)
        elif not grad and not copies:
            made_without_grad.update(o.name for o in outs)
        args = b.args
        tensor_args = [a for a in proxy_args(b) if isinstance(a, TensorProxy)]
        # (``t.type_as(h)``: h gives a dtype, not a gradient; gradient_operands.py)
        differentiable = grad and any(requires(a) for a in gradient_operands(b.sym.name, tensor_args))
        name = b.sym.name
        first = getattr(args[0] if args else None, "name", None)
        if b.sym.name == "detach":
            detached.update((o.name, o.name) for o in outs)
        elif (b.sym in detaching_views or b.sym.name in _SAME_TENSOR_OPS) and first in detached:
            detached.update((o.name, detached[first]) for o in outs)
        if is_gather_view(b):  # (gather_views.py, Note [a diagonal is a view the rewrite replays by its own function])
            gathered.update((o.name, memory(args[0])) for o in outs)
        written, of_self = written_by(b, memory)
        if grad and b.sym in detaching_views and first in made_without_grad and not written:
            # a view, under grad mode, of a view made under no_grad (``with no_grad(): t2 = t0[::2]``, then
            # ``t3 = t2[0:1]``): its backward ends at ``t2``, which has no history, so it reaches nothing of
            # ``t0``'s (fuzz seed 35060 #26, calls --grad: ``t0.mul_(t0.detach())``'s save was taken for live)
            made_without_grad.update(o.name for o in outs)
        if of_self and written and all(t.name in detached for t in written):
            detached_writes.add(i)  # Note [a gradient written into a detached tensor] (live_backward.py)
        if of_self and not differentiable and first in detached:
            detached.update((o.name, detached[first]) for o in outs)  # (``d.neg_()`` of a detached ``d``: ``d`` itself)
        if grad and not differentiable and (not written or getattr(args[0] if args else None, "name", None) in gradless):
            gradless.update(o.name for o in outs)
        if of_self:
            name = name if name.endswith("_") else name + "_"  # F.relu(h, inplace=True) is relu_
        saved = saves_of(name, args, b.kwargs) if differentiable else ()
        arg_saves = [
            (what, needs) for what, needs in saved
            if not isinstance(what, str) and any(requires(args[p]) for p in needs if isinstance(args[p], TensorProxy))
        ]
        if of_self:  # saved before the op's own write: x.mul_(x) raises
            saves.extend(_saves_now(arg_saves, args, counter, writes, i, name))
        for t in written:
            if grad and t.name in multi and (requires(t) or differentiable):
                refuse_multi_output_write(name, t.name)
            if grad and t.name in no_grad_views and (requires(t) or differentiable):
                refuse_no_grad_view_write(name, t.name)
            k = memory(t)
            writes.setdefault(counter(t), []).append((i, name))
            if differentiable and of_self:  # (batch_norm's running stats do not carry a gradient)
                rg_memory.add(k)
                grad_written.add(k)
                if t.name in detached:  # (a gradient now enters the detached tensor)
                    written_with_grad.add(detached[t.name])
        if not of_self:  # saved after the op's own writes (of other arguments)
            saves.extend(_saves_now(arg_saves, args, counter, writes, i, name))
        if differentiable and i in (foreach_saves or {}):  # (one node for the whole foreach call: foreach_saves.py)
            op, operands = foreach_saves[i]
            saves.extend(_Save(counter(t), len(writes.get(counter(t), ())), i, op, t.name) for t in operands)
        # (a getitem with a list or tensor key is a copy, whose result carries the gradient: ``tanh(t2[[0, 1]])`` of
        # ``t2 = a * b`` kept mul's save dead, and a later write of ``b`` ran; fuzz seed 35062 #45, calls --grad)
        if not of_self and differentiable and (b.sym not in views or not _is_a_view(b)):
            for o in outs:  # (an integer or bool result requires no grad: a.to(torch.uint8), a > 0)
                if o.name not in detached and dtypes.is_inexact_dtype(o.dtype):
                    rg_memory.add(memory(o))
        if grad and b.sym.name in MULTI_OUTPUT_VIEWS:
            multi.update(o.name for o in outs)
        elif b.sym in views and args and getattr(args[0], "name", None) in multi:
            multi.update(o.name for o in outs)
        # (a reshape or flatten that is a view in eager too: one that copies has a clone's memory, layouts.py's
        # decision; fuzz seed 20771 #59, hidden --grad: ``with torch.no_grad(): t2 = t0.reshape(1)``, then ``t2.abs_()``)
        viewing = b.sym in views and _is_a_view(b) or (b.sym in maybe_views and args and isinstance(args[0], TensorProxy)
                                                        and all(memory(o) == memory(args[0]) and o.name not in selves
                                                                for o in outs))  # (contiguous(): the tensor itself)
        if not grad and is_no_grad_contiguous_copy(b, args, outs, requires, memory):
            no_grad_copies.update(o.name for o in outs)  # Note [a contiguous copy made under no_grad, returned]
        if viewing and (not grad or getattr(args[0], "name", None) in no_grad_views):
            no_grad_views.update((o.name, len(writes.get(counter(o), ()))) for o in outs if o.name not in detached)
        for what, needs in saved:
            if isinstance(what, str) and any(requires(args[p]) for p in needs if isinstance(args[p], TensorProxy)):
                for o in outs[int(what[3:] or 0):][:1]:  # ("out": the first result; "out1": the second, ...)
                    k = counter(o)
                    saves.append(_Save(k, len(writes.get(k, ())), i, name, o.name))
        # (detach's result carries no gradient: Note [a detached tensor starts no backward], live_backward.py)
        flows[i] = differentiable and b.sym.name != "detach" and any(dtypes.is_inexact_dtype(o.dtype) for o in outs)

    stale = [s for s in saves if len(writes.get(s.memory, ())) > s.at]
    if not stale:
        return
    # (a result made under no_grad starts no backward either: ``with torch.no_grad(): t3 = t0.permute(1, 0)``
    # returned kept sin's save of ``t0 = b.sin()`` live, fuzz seed 20727 #18, basic --grad)
    carries_none = {d for d, one in detached.items() if one not in written_with_grad} | made_without_grad
    carries_none.update(g for g in gradless if memory_of(g) not in grad_written)
    # (by version counter: a view of a base another view of which was written is read through the base's new history,
    # those writes' backward included: version_counters.py, Note [a view read after a write into another view])
    live = live_ops(top_bsyms[: n + 1], counter, flows, carries_none, detached, detached_writes)
    for s in stale:
        if s.index in live:
            _refuse_stale_save(s, writes[s.memory][s.at])


def _saves_now(arg_saves, args, counter, writes: dict, index: int, name: str) -> list:
    """A ``_Save`` of each saved argument, at the number of writes its version counter has had so far."""
    return [
        _Save(counter(args[w]), len(writes.get(counter(args[w]), ())), index, name, args[w].name) for w, _ in arg_saves
    ]


def _refuse_stale_save(save: _Save, write) -> None:
    index, op = write
    if save.op in UNTRACKED_SAVE_OPS:
        refuse_untracked_save(save.op, save.name, op)
    raise AliasInputError(
        f"fusion_alias: {save.op} saves {save.name} for the backward, and a later in-place {op} writes "
        "into that memory before the backward, in a call that computes gradients. Eager PyTorch raises at "
        "backward: \"one of the variables needed for gradient computation has been modified by an inplace "
        "operation\". Workarounds: clone before the in-place op (or the saved tensor: "
        f"{save.op}(x.clone())), or use the out-of-place op"
    )


# Note [writes into views made under no_grad]
# -------------------------------------------
# A view made under ``torch.no_grad()`` (Thunder tags its result ``DETACHED_AUTOGRAD_GRAPH``) (of any tensor, or a view of such a view made later) and then
# written in place under grad mode, where the view or the value written requires grad, is an error in
# eager: "A view was created in no_grad mode and is being modified inplace with grad mode enabled"::
#
#     with torch.no_grad():
#         v = a[0]
#     v.mul_(2)            # raises in eager; the functional program ran it (session 19 probe)
#
# So is a read of such a view under grad mode (or returning it) after its memory was written in place in
# either mode, where it requires grad: "A view was created in no_grad mode and its base or another view of
# its base has been modified inplace with grad mode enabled" (``a.mul_(2); return v * 1``).
# Not refused (eager runs them, checked): a write under ``no_grad``, into ``a.detach()[0]``, into a copy
# (``a * 1``, ``a[[0, 1]]``); a read before the write, under ``no_grad``, or through ``v.detach()``. Views
# that may be copies (``reshape``, ``flatten``) are not checked.
def _is_a_view(b) -> bool:
    """Whether a view op's result is a view: not ``detach`` (no gradient), not a getitem with a list or
    tensor key (a copy)."""
    if b.sym.name == "detach":
        return False
    if b.sym.name == "getitem" and len(b.args) > 1:
        key = b.args[1] if isinstance(b.args[1], tuple) else (b.args[1],)
        return not any(isinstance(k, (list, TensorProxy)) for k in key)
    return True


# Note [reads that ask eager's autograd nothing]
# ----------------------------------------------
# Eager raises for a read of a view made under no_grad whose memory was written since only when the
# read asks for the view's ``grad_fn``: an op with a derivative. Ops whose results carry no gradient
# never ask (torch 2.9.1, checked by hand)::
#
#     with torch.no_grad(): t1 = t0.narrow(0, 2, 2)
#     t0 += 0.125
#     t1 > t1; t1.eq(0); t1.isnan(); t1.argmax(); t1.long(); t1.bool(); torch.zeros_like(t1)   # run
#     t1 * 2; t1.abs(); t1.sign(); t1.half(); t1.isfinite(); torch.isclose(t1, t1)        # raise
#
# (``isfinite`` and ``isclose`` call ``abs`` inside.) Refusing the first kind was a false "eager PyTorch
# raises" (fuzz seed 31027 #194, dtype --grad: ``t2 = t1 > t1``).
_CASTS = frozenset({"to", "type", "long", "int", "bool", "short", "char", "byte"})


def _starts_no_backward(b) -> bool:
    """Whether eager's ``b`` reads its tensor arguments without asking their ``grad_fn`` (Note [reads that ask
    eager's autograd nothing]): an op of ``gradient_operands.NO_GRADIENT``, or a cast to an integer or bool dtype."""
    name = b.sym.name
    if name in NO_GRADIENT:
        return True
    return name in _CASTS and all(not dtypes.is_inexact_dtype(o.dtype) for o in tensor_outs(b))
