"""The grad mode a compiled function leaves behind, the same on every call (Note [a grad mode the function
leaves changed])."""

from __future__ import annotations

import contextlib
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


def mode_left(jitted, compiled: bool) -> bool:
    """The grad mode a call of the Thunder function ``jitted`` that has just returned leaves: the mode its cache
    entry leaves, recorded on the call that compiled it (``compiled``), set on later calls (module Note).

    What runs after the call runs under the mode ``entry`` it came in with, or on where the call computes
    gradients (the mode Thunder's autograd Function ran under; api.py), then the call leaves this one
    (:func:`entered`, where the two differ, or the mode now is not ``entry``). Views of arguments remade after
    the call (view_outputs.py), and the caller's written inputs' views replayed (input_outputs.py), are made in
    that entry mode: made in the mode the function left, ``y = x.t(); torch.set_grad_enabled(False); return y``
    came back with no history and ``x``'s gradient was lost (session 30). (A plain function, not a context
    manager: the common call, whose modes all agree, costs no generator; api.py.)"""
    prologue = jitted._lc_cs.last_prologue
    if compiled:
        left = torch.is_grad_enabled()
        if prologue is not None:
            _LEFT[prologue] = left
        return left
    left = _LEFT.get(prologue) if prologue is not None else None
    return torch.is_grad_enabled() if left is None else left


@contextlib.contextmanager
def entered(entry: bool, left: bool):
    """Run the block under grad mode ``entry``, then leave mode ``left`` (:func:`mode_left`)."""
    torch.set_grad_enabled(entry)
    try:
        yield
    finally:
        torch.set_grad_enabled(left)


def same_entry(new_prologue, old_prologue) -> None:
    """``new_prologue`` (a guard around ``old_prologue``: api.py) leaves the grad mode ``old_prologue``'s call left."""
    if old_prologue in _LEFT:
        _LEFT[new_prologue] = _LEFT[old_prologue]


def enables_grad(traced) -> bool:
    """Whether the traced program turns gradient computation on somewhere (``torch.enable_grad``; api.py,
    Note [enable_grad inside a call made under no_grad])."""
    if traced is None:
        return False
    return any(b.sym.name == "_set_grad_enabled_with_warning" and b.args and b.args[0] is True
               for b in traced.bound_symbols)
