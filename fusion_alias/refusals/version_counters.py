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


def version_counters(memory_of, counter_groups):
    """``counter(p)``: the name of the version counter of proxy ``p``'s memory, ``memory_of(name)`` joined over
    ``counter_groups`` (Note [one version counter per storage])."""
    counters = UnionFind()
    for group in counter_groups:
        counters.union(*[memory_of(n) for n in group])

    def counter(p) -> str:
        return counters[memory_of(p.name)]

    return counter
