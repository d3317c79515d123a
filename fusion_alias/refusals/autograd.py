"""Refusals in calls that compute gradients: writes Thunder 0.2.6's autodiff gets wrong silently.

Eager accepts every program refused here; each Note below gives one, checked
against eager with plain ``thunder.jit`` too, and says what comes out wrong
without the refusal (a gradient, or a write lost, with no error):

* Note [writes into inputs that require grad]: ``a.add_(1)`` with ``a`` requiring grad.
* Note [writes into tensors with views, with gradients]: ``c = a * 2; v = c[0]; c.add_(b)``.
* Note [values saved for the backward]: ``t = a * 0.5; t.sin_(); return t * 0.5``.
* Note [aliased inputs with gradients]: inputs sharing a storage, and a write.

The first two are checked inside ``writes._check_writes`` (they need its walk
in program order: which memory holds values that require grad).
"""

from __future__ import annotations

from thunder.core.proxies import ProxyTag, TensorProxy
import thunder.core.prims as prims

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo, proxy_args, proxy_outs
from fusion_alias.errors import AliasInputError
from fusion_alias.leaf_views import detaches


# Note [writes into inputs that require grad]
# -------------------------------------------
# A call that needs gradients goes through Thunder's autodiff, which splits the
# program into a forward and a backward. Thunder 0.2.6 gets in-place writes into
# inputs that require grad wrong there, with no error (checked on CPU, x = w * 1):
#
#     def f(a, b): a.add_(1); return a * b      # w.grad comes back None
#     def f(x): x[0:2].add_(1); return x * 1    # the write is lost: wrong values
#
# and fails outright on others (a.add_(1); return a * a). Plain thunder.jit
# gives the same. Writes into tensors the program makes (c = a * 2; c.add_(1))
# and a.clone() before writing are right. So such writes are refused.
# The leaf case is refused by eager PyTorch itself.


class WriteIntoGradInput(AliasInputError):
    """The refusal of Note [writes into inputs that require grad], naming the input written
    (``tensor``: the caller's tensor, when the pass knows it).

    ``fusion_alias.jit`` never meets it: calls that compute gradients are functionalized
    before Thunder's autodiff (``autograd_functionalize.py``). Direct
    ``thunder.jit(fn, executors=[fusion_alias.executor])`` keeps Thunder's alias pass, and gets it.
    """

    def __init__(self, message: str, tensor=None, grad_enabled: bool = True):
        super().__init__(message)
        self.tensor = tensor
        self.grad_enabled = grad_enabled


def _is_differentiable(x, info: AliasInfo, differentiable: set) -> bool:
    """Whether tensor ``x`` requires grad: it, or the memory it names (its root), is in ``differentiable``."""
    return isinstance(x, TensorProxy) and (x.name in differentiable or info.root.get(x.name) in differentiable)


def _propagate_differentiable(b, info: AliasInfo, differentiable: set) -> None:
    """Add ``b``'s outputs to ``differentiable`` when one of its tensor arguments requires grad."""
    if ops.is_copy(b):  # its result names the destination's memory: decided at the write
        return
    if any(_is_differentiable(a, info, differentiable) for a in proxy_args(b)):
        differentiable.update(o.name for o in proxy_outs(b) if isinstance(o, TensorProxy))


def _check_write_into_differentiable_view(dst: str, root: str, info: AliasInfo, members: dict, made=None) -> None:
    """Refuse, in a call that computes gradients, a write into memory that requires grad (the caller
    checks that) and has views.

    Note [writes into tensors with views, with gradients]: Thunder 0.2.6's autodiff
    gets the gradient wrong, without an error, when the program writes into a
    tensor that requires grad and also has a view (taken before the write,
    written through or read), also with plain thunder.jit (checked):

        c = a * 2; v = c[0]; c.add_(b); return v     # b's gradient is wrong
        c = a * 2; c[0].mul_(b[0]); return c         # a's and b's are wrong

    A write into a view of memory that does not require grad before the write
    (``cache[:, 0] = k``) is differentiated right, and so is a write into a tensor
    with no views (``c = a * b; c.tanh_()``): those run. A second write into
    ``cache`` (its memory requires grad after the first) is refused: Thunder gets
    ``cache[:, 0] = k; cache[:, 1] = k * 2`` right, but not the same writes into
    ``c = a * 2``, and the trace does not tell the two apart well enough.

    Only views that exist when the write runs count (``made``: the names made so far,
    in program order; all of them when None). A view made after the write reads
    the written value, which Thunder gets right: the joint trace's backward
    reshapes the result of ``F.relu(h, inplace=True)`` for the next ``F.linear``'s
    gradient, and counting that ``reshape`` refused every Linear -> ReLU(inplace)
    -> Linear block. A later write into the same memory is checked against it then.
    """
    key = info.view_key.get(dst)
    others = [
        n
        for n in members.get(info.group(dst), ())
        if info.root.get(n) == root and info.view_key.get(n) != key and (made is None or n in made)
    ]
    if not others:
        return
    raise AliasInputError(
        f"fusion_alias: in-place write into {dst}, which requires grad and shares memory with "
        f"{', '.join(sorted(others)[:3])}{' ...' if len(others) > 3 else ''} (views of {root}), in a call that "
        "computes gradients: not supported. Thunder 0.2.6's autograd computes wrong gradients through "
        "writes into tensors that have views, without an error, so fusion_alias refuses instead. "
        "Workarounds: an out-of-place op (c = c + b; c = torch.cat(...)), or torch.no_grad() when no "
        "gradient is needed"
    )


def _check_no_read_of_overwritten_values(bsyms) -> None:
    """Refuse, in a call that computes gradients, a read of a tensor's old name after a write into it.

    Note [values saved for the backward]: with gradients, Thunder's alias pass
    renames every later read of written memory to the write's result (through
    ``update_aliases``), so a read of the *old* name after the write comes from
    the autodiff: a value saved for the backward, meant as it was before the
    write. But the write lands in that very buffer, so the backward reads the new
    values, and the gradient is wrong without an error (checked, plain
    thunder.jit too)::

        t = a * 0.5; t.sin_(); return t * 0.5     # d sin(t)/dt is cos(t) of the old t

    Eager saves what it needs before an in-place op (or raises). ``tanh_`` and
    ``add_``, whose gradients need no old value, are not affected and run. The
    trace's return reads old names too (the mutated inputs, ``flat_args``, and a
    module's running statistics): that is the buffer itself, and it is fine.
    """
    written: dict[str, int] = {}
    for i, b in enumerate(bsyms):
        if written and b.sym.id is not prims.PrimIDs.RETURN:  # returning the buffer itself is the write's point
            for a in proxy_args(b):
                if isinstance(a, TensorProxy) and a.name in written:
                    raise AliasInputError(
                        f"fusion_alias: {a.name} is written in place and its value from before the write is "
                        f"read afterwards (by {b.sym.name}), in a call that computes gradients: not supported. "
                        "Thunder 0.2.6's autodiff saves the old value for the backward, but the write "
                        "overwrites that very buffer, so the gradient would be wrong without an error. "
                        "Workarounds: an out-of-place op (t = t.sin() instead of t.sin_()), or "
                        "torch.no_grad() when no gradient is needed"
                    )
        if ops.is_copy(b):
            written.setdefault(b.args[1].name, i)


def _check_aliased_inputs_with_gradients(bsyms, input_groups) -> None:
    """Refuse a call that computes gradients, has inputs that share memory, and writes in place.

    Note [aliased inputs with gradients]: such calls go through Thunder's alias
    pass (Note [autograd keeps Thunder's alias pass]), which treats inputs that
    share a *storage* as aliases, overlapping or not. With inputs of different
    sizes it fails (api.py names them); with inputs of the same size it replaces
    one by a reshape of the other, and values or gradients come out wrong without
    an error (checked, plain thunder.jit too): inputs ``x, x.view(-1)`` with
    ``t = torch.where(b[1::2] > 0, b[1::2], 0); t.tanh_(); return b, a`` give
    wrong gradients; the disjoint ``x[0, 0], x[2, 5]`` with a write into a fresh
    tensor return ``a``'s value for ``b``.
    """
    shared = [g for g in input_groups if len(g) > 1]
    if not shared or not any(ops.is_copy(b) for b in bsyms):
        return
    raise AliasInputError(
        f"fusion_alias: this call computes gradients, its inputs {', '.join(shared[0])} share a storage "
        "(overlapping or not), and "
        "the program writes in place: not supported. Such calls go through Thunder 0.2.6's alias pass "
        "and autograd, which compute wrong gradients for them without an error. Workarounds: pass clones "
        "so that the inputs do not share memory, or run under torch.no_grad() when no gradient is needed"
    )


def _forward_outputs(bsyms) -> list:
    """The forward's outputs of the joint trace Thunder's grad transform hands to executors
    (its return's ``fw_flat_out``), or ``[]`` when the return does not hold them."""
    for b in reversed(bsyms):
        if b.sym.id is prims.PrimIDs.RETURN:
            ret = b.args[0] if b.args else None
            outs = ret.get("fw_flat_out", ()) if isinstance(ret, dict) else ()
            return [o for o in outs if isinstance(o, TensorProxy)]
    return []


def _check_outputs_sharing_written_memory(bsyms, info: AliasInfo) -> None:
    """Refuse, in a call that computes gradients, two outputs that share memory a write changes
    after one of them was made.

    Note [outputs sharing written memory]: eager returns one tensor under two names,
    and the gradient reaching it is the sum of what each output gets. Thunder 0.2.6's
    alias pass renames the two names into one proxy, or keeps a view taken before a
    later write as a value from before the write; its autodiff then drops one
    output's cotangent, or sends it around the write, and the gradient is wrong
    without an error (checked, plain thunder.jit too; the fuzzer's #24)::

        t0 = a * 0.5; t1 = t0.neg_(); t0.mul_(0.5); return t1, t0   # fw_flat_out (t13, t13)
        t0 = a * 0.5; v = t0.view(3); t0.mul_(2); return t0, v      # v's gradient skips the mul

    With a loss ``o1.sum() + 3 * o2.sum()`` eager gives -1 per element of ``a`` for
    the first, Thunder 0. Outputs made after the last write into their memory
    (``c.add_(1); return c, c[0]``), and one output per memory, are not affected.
    """
    outs = _forward_outputs(bsyms)
    if len(outs) < 2:
        return
    made: dict[str, int] = {}
    last_write: dict[str, int] = {}
    for i, b in enumerate(bsyms):
        for o in proxy_outs(b):
            if isinstance(o, TensorProxy):
                made.setdefault(o.name, i)
        if ops.is_copy(b) and isinstance(b.args[1], TensorProxy):
            last_write[info.group(b.args[1].name)] = i
    by_group: dict[str, list[str]] = {}
    for o in outs:
        if o.name in info.root:
            by_group.setdefault(info.group(o.name), []).append(o.name)
    for group, names in by_group.items():
        written = last_write.get(group)
        if len(names) < 2 or written is None:
            continue
        stale = len(set(names)) < len(names) or any(made.get(n, -1) < written for n in names)
        if stale:
            shown = ", ".join(dict.fromkeys(names))
            raise AliasInputError(
                f"fusion_alias: the program returns {len(names)} tensors that share memory ({shown}) and writes "
                "into that memory in place after one of them was made, in a call that computes gradients: not "
                "supported. Thunder 0.2.6's autodiff drops or misroutes one output's gradient there, without an "
                "error, so fusion_alias refuses instead. Workarounds: return the tensor once, clone() one of the "
                "outputs, or use out-of-place ops"
            )


_INDEX_PUT_NAMES = frozenset({"index_put", "index_put_"})


def _check_index_put_gradients(bsyms, info: AliasInfo, grad_names) -> None:
    """Refuse, in a call that computes gradients, ``index_put`` whose values require grad.

    Note [index_put's values get no gradient]: Thunder 0.2.6's autodiff gives the values of
    ``index_put`` no gradient, in place or not, accumulating or not, plain ``thunder.jit`` too::

        h = w * 1; h.index_put_((idx,), v)   # w.grad right, v.grad None (eager: v's share of the loss)

    A missing gradient is a silent wrong result (an optimizer skips a parameter whose ``.grad`` is
    None), so the call is refused. ``h[idx] = v`` (Thunder's setitem) and ``scatter_add`` have
    gradients and compute the same. ``grad_names``: the tensors that require grad as the walk
    starts (the inputs); ``bsyms``: the user-level trace or the flattened one (both spell the op
    with its values third). A detached value does not require grad.
    """
    differentiable = set(grad_names)
    detached: set = set()  # (a detached tensor names its argument's root: leaf_views.py, Note [detach is the same view])
    for b in bsyms:
        if detaches(b, detached):
            detached.update(o.name for o in proxy_outs(b) if isinstance(o, TensorProxy))
        if b.sym.name in _INDEX_PUT_NAMES or b.sym.id is prims.PrimIDs.INDEX_PUT:
            args = b.args
            values = b.kwargs.get("values", args[2] if len(args) > 2 else None)
            accumulate = b.kwargs.get("accumulate", args[3] if len(args) > 3 else False)
            if getattr(values, "name", None) not in detached and _is_differentiable(values, info, differentiable):
                workaround = ("h.scatter_add(0, idx.unsqueeze(1).expand_as(v), v)" if accumulate
                              else "h[idx] = v")
                raise AliasInputError(
                    f"fusion_alias: index_put (accumulate={accumulate}) of values {values.name} that require grad, in "
                    "a call that computes gradients: not supported. Thunder 0.2.6's autodiff gives those values no "
                    f"gradient (their .grad would be None where eager's is not). Workaround: {workaround}, which "
                    "computes the same with a gradient, or detach the values"
                )
        if b.sym.name != "detach" and not any(_DETACHED in getattr(o, "tags", ()) for o in proxy_outs(b)):
            _propagate_differentiable(b, info, differentiable)


_DETACHED = ProxyTag.DETACHED_AUTOGRAD_GRAPH
