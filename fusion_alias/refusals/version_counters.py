"""Which tensors share eager's version counter, for the refusals of its autograd errors (saved_versions.py)."""

from __future__ import annotations

from networkx.utils import UnionFind


# Note [one version counter per storage]
# --------------------------------------
# Eager keeps one version counter per base tensor, shared by every view of it and by ``detach()``, whether or
# not two views overlap. So a write into one view makes a tensor saved through another, disjoint, view stale::
#
#     x = leaf * 1; f(x[0:2], x[2:4])      # the inputs share x's storage and counter, and no element
#     def f(a, b):
#         a.sigmoid_()                     # saves its result a, at x's version 1
#         b.mul_(2)                        # x's version 2
#         return a.sum()                   # backward: SigmoidBackward0 finds version 2, raises
#
# The trace's memories (the alias roots, joined by ``input_groups`` where inputs may overlap) keep ``a`` and
# ``b`` apart, as they must for hazards; the writes and saves here are counted per version counter instead: the
# memories of trace inputs that share a storage are one counter (``counter_groups``; in the function, views of
# one root share the root's counter already). Not so in eager: a tensor made by ``.data`` has a counter of its
# own over the same storage; such inputs are taken as one counter, as overlapping ones were before (a refusal
# where eager runs, never a gradient eager would not give). The decision depends on which inputs share a storage:
# the guard keys that in calls with gradients (guard.py, Note [inputs that share a storage, in a call with
# gradients]), so a program compiled for ``x[0:2] * 1, x[2:4] * 1`` is not reused for ``x[0:2], x[2:4]``.
#
# Note [a view read after a write into another view]
# --------------------------------------------------
# The backward that runs is also eager's: a view of a base, read after another view of that base was written in
# place, is read through the base's new history (its ``grad_fn`` is rebuilt as ``AsStridedBackward0`` of the base's
# ``CopySlices``), which holds the other view's writes and the saves they made. Session 45 (fuzz calls --grad seed
# 35062 #0, a call on disjoint views of one base ``xd``)::
#
#     a, b = xd[2:18].view(4, 4), xd[20:36].view(4, 4)
#     torch._foreach_addcdiv_([t1, b], [t1, a], [t1, a], [0.125, 2.0])   # b.addcdiv_(a, a, ...) saves a
#     torch._foreach_clamp_min_([b, t0], 2.0)                             # xd's version moves
#     return a, ...                        # a's backward goes through b's addcdiv_: eager raises
#
# fusion_alias returned a gradient: the walk that finds which backward runs (live_backward.py) followed memories, and
# ``a`` and ``b`` share none. It follows version counters now (``counter``), a read after the writes reaching the
# writers of the whole storage (the reverse walk reaches only the writes before the read); where no inputs share a
# storage, a counter is a memory, as before.


def version_counters(memory_of, counter_groups):
    """``counter(p)``: the name of the version counter of proxy ``p``'s memory, ``memory_of(name)`` joined over
    ``counter_groups`` (Note [one version counter per storage])."""
    counters = UnionFind()
    for group in counter_groups:
        counters.union(*[memory_of(n) for n in group])

    def counter(p) -> str:
        return counters[memory_of(p.name)]

    return counter
