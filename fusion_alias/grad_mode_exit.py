"""The grad mode a compiled function leaves behind, the same on every call (Note [a grad mode the function
leaves changed])."""

from __future__ import annotations

import weakref

import torch

# Note [a grad mode the function leaves changed]
# ----------------------------------------------
# ``torch.set_grad_enabled(b)`` called as a statement (not a ``with`` block) leaves the mode changed
# after the function returns::
#
#     def f(x, w):
#         torch.set_grad_enabled(False)
#         return x * w
#
#     f(x, w); torch.is_grad_enabled()      # eager: False, after every call
#
# Thunder 0.2.6 traces the statement as a marker and, at the end of each call, sets torch's mode to
# the one its compile data holds: after tracing, the program's last mode (False, as eager); on a cache
# hit, the mode the call came in with, refilled from the call's cache info (True). So the first call
# left gradients off and the second on, silently (plain ``thunder.jit`` too): every op the caller ran
# next did or did not record a history by the number of calls so far. ``with torch.no_grad():`` blocks
# and a mode restored by the function itself leave the entry mode, on both paths.
#
# Each cache entry is keyed by the mode at entry (Thunder's cache info holds it), so the mode it leaves
# is fixed: recorded, by the entry's prologue, on the call that compiled it, and set after each later
# call that ran it.

_LEFT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # prologue -> the grad mode its call leaves


def leave_as_traced(jitted, compiled: bool) -> None:
    """After a call of the Thunder function ``jitted``, which has just returned: record the grad mode its
    new cache entry leaves (``compiled``), or set the one its cached entry left when it was compiled."""
    prologue = jitted._lc_cs.last_prologue
    if prologue is None:
        return
    if compiled:
        _LEFT[prologue] = torch.is_grad_enabled()
        return
    mode = _LEFT.get(prologue)
    if mode is not None and mode is not torch.is_grad_enabled():
        torch.set_grad_enabled(mode)
