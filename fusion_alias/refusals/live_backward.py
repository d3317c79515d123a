"""Which ops' backward runs in eager, for the refusal of tensors saved for the backward, then written
(saved_versions.py, Note [tensors saved for the backward, then written])."""

from __future__ import annotations

from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_flatten
import thunder.core.prims as prims

from fusion_alias.aliasing import copies_in, proxy_args, tensor_outs


def live_ops(bsyms, memory, flows: dict, carries_none: set, detached: dict, detached_writes=frozenset()) -> set:
    """The top-level indices whose backward runs (Note [tensors saved for the backward, then
    written]): a reverse walk over memories, from the returned tensors.

    Note [a detached tensor starts no backward]: ``carries_none`` names the results of ``detach`` and
    the views of them whose memory no differentiable in-place op writes through one of them: a gradient neither leaves
    through one (returned) nor enters one (read), though it shares its memory with what it detaches.
    ``t0 = b.amax(-1); t1 = t0.detach()[2:4, 0]; b.clamp_max_(-0.1); return t1`` runs in eager: amax's
    backward never runs (fuzz seed 20491 #22, refused before, saying eager raises). Written with a
    value that requires grad (``d = t0.detach(); d.copy_(t0 * 2); return d``), the name still reads
    ``d`` in the trace, and the gradient goes through the write: not in it.

    Note [a gradient written into a detached tensor]: an in-place op that writes a value with a gradient through
    detached names only (``t0 = b.detach()[1::2, ::2]; t0.add_(b.norm())``) gives that gradient to the detached
    tensor's own history, which only the detached names and their views read; ``b``, which shares the memory,
    never backpropagates into it. So such an op's backward runs only where a detached name of that memory is
    reached (``("detached", memory)``), not wherever the memory is: returning ``b`` kept ``norm``'s save of ``b``
    live, and a later write of ``b`` was refused saying eager raises at backward, where eager runs (fuzz seed
    31028 #148, fresh --grad).

    Note [a result computed from no gradient starts no backward]: the same holds for the result of any
    op under grad mode none of whose tensor arguments requires grad (``gradless``), and of the ops after
    it. Memory alone does not tell: ``c = t2.detach().conj()`` of a real ``t2 = b.abs()`` is ``t2``'s
    detached tensor itself (eager's ``conj`` of a real tensor returns it), so it shares ``t2``'s memory,
    which carries a gradient; ``b[1::2] = 1.5; return c / 2, b * 2`` runs in eager (abs's backward never
    runs), and was refused saying eager raises (fuzz seed 20784 #36, dtype --grad). Such a name counts
    as carrying a gradient again once a differentiable in-place op writes its memory, through any name
    (``grad_written``): eager's views of a base that starts to require grad do too.

    Note [one detach, one tensor]: each ``detach()`` call makes a tensor of its own for autograd: it shares the
    memory, not the history, with every other tensor of that memory, the results of other ``detach()`` calls of it
    included. So ``detached`` maps each detached name to the ``detach()`` result it is (or is a view of), and the
    walk follows a gradient into that one tensor's history (``("detached", that result)``), never into the memory.
    ``t2 = t0.detach()[1::2]; t0.detach().copy_(t1); return t2`` returns a tensor that requires no grad in eager:
    the write with a gradient went into the *other* detached tensor. Keyed by memory, ``t2`` carried the gradient,
    which kept ``t0 = b.exp()``'s save live, and a later ``t0.mul_(t0)`` was refused saying eager raises at
    backward, where eager runs (fuzz seed 35057 #41, calls --grad)."""
    live: set = set()

    def reached(a) -> None:  # a gradient reaches ``a``: its memory, or, for a detached name, its detach()'s history
        if isinstance(a, TensorProxy) and a.name not in carries_none:
            live.add(("detached", detached[a.name]) if a.name in detached else memory(a))

    ret = bsyms[-1]
    if ret.sym.id is prims.PrimIDs.RETURN:
        value = ret.args[0] if ret.args else None
        outs = value["output"] if isinstance(value, dict) and "output" in value else value  # not flat_args
        for a in tree_flatten(outs)[0]:
            reached(a)
    found = set()
    for i in range(len(bsyms) - 2, -1, -1):
        if not flows.get(i):
            continue
        b = bsyms[i]
        written = written_by(b, memory)[0]
        if i in detached_writes:  # Note [a gradient written into a detached tensor]
            touched = [("detached", detached[t.name]) for t in written]
        else:
            touched = [memory(o) for o in tensor_outs(b)] + [memory(t) for t in written]
        if any(k in live for k in touched):
            found.add(i)
            for a in proxy_args(b):
                reached(a)
    return found


def written_by(b, memory) -> tuple[list, bool]:
    """The tensors ``b`` writes in place that bump eager's version counters, and whether it writes its
    first argument (an in-place op: ``add_``, ``F.relu(h, inplace=True)``, ``setitem``) rather than
    only others. ``batch_norm`` in training updates its running stats without a version bump (checked
    in eager: ``rm._version`` stays 0), so a BatchNorm called twice in one forward runs: none."""
    if b.sym.name == "batch_norm":
        return [], False
    if b.sym.id is prims.PrimIDs.COPY_:
        return ([b.args[1]] if isinstance(b.args[1], TensorProxy) else []), True
    copies = copies_in(b) if b.subsymbols else ()
    if not copies:
        return [], False
    first = b.args[0] if b.args and isinstance(b.args[0], TensorProxy) else None
    into = [c.args[1] for c in copies if isinstance(c.args[1], TensorProxy)]
    if first is not None and any(memory(t) == memory(first) for t in into):
        return [first], True
    return into, False
