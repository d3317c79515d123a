"""A view that addresses storage, read from memory a call that computes gradients writes (``functional_rewrite``)."""

from __future__ import annotations

from fusion_alias.errors import AliasInputError


# Note [as_strided of a value the rewrite replays]
# ------------------------------------------------
# ``x.as_strided(size, stride)`` addresses ``x``'s *storage* (from ``x``'s storage offset), not ``x``'s
# elements. A read after a write is replayed on a value the pure program computes (a view chain on the
# memory's new value, or its elements gathered for inputs joined into one memory), whose storage is its
# own: with ``b = x0.as_strided((2, 3), (1, 1), 1)`` and ``a = x0``, ``a.add_(0.5); return
# b.as_strided((2,), (3,))`` is ``x0[1], x0[4]`` in eager, and the replay took elements 0 and 3 of the
# gathered (2, 3) value, ``x0[1], x0[2]`` (fuzz seed 20119 #79, ``--grad``: a wrong value); with
# ``b = x0[1:4]`` it raised torch's "setStorage: ... out of bounds". So such an ``as_strided`` is refused,
# also of a view *made after* the write (no replay, the same storage): ``a[0] = 0.5; t1 = b.permute(0, 1);
# t1.as_strided((2, 3), (3, 1))`` with that ``b`` read the gathered value's storage (fuzz 20706 #16).
STORAGE_VIEWS = frozenset({"as_strided"})


def refuse_storage_view(bsym) -> None:
    raise AliasInputError(
        f"fusion_alias: in a call that computes gradients, {bsym.sym.name} reads a tensor whose memory the call "
        "writes: it addresses the tensor's storage, which the call's pure program does not keep: not supported. "
        "Workarounds: call it before the write, use slicing, or run under torch.no_grad() when no gradient is needed"
    )
