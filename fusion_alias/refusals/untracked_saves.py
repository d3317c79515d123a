"""Ops whose eager backward reads a saved operand that its version check does not track.

Note [saves eager's version check does not track]
-------------------------------------------------
``torch.kron`` (torch 2.9.1, ATen's ``KronImpl``) reshapes its operands with ``at::_unsafe_view`` and
multiplies the two views: ``MulBackward0`` saves each view for the other's gradient, but an
``_unsafe_view`` does not share its base's version counter, so a later in-place write into the operand
is not caught at backward: eager reads the *written* values, without an error. fusion_alias
functionalizes the call before Thunder's autodiff and returned the gradient of the values the op read,
so its gradient differed from eager's, silently. Worked example (session 40 hand probe), ``w`` a leaf::

    x = w * 2
    y = torch.kron(x, x)          # saves two untracked views of x
    x.add_(1)                     # eager: no error at backward
    return y                      # eager's w.grad reads x + 1: 23.06 per element where
                                  # the program's own gradient (fusion_alias's, before) is 11.06

No value fusion_alias can give agrees with eager's (it is not the gradient of any program the user
wrote), so such a call is refused, saying so. The rule is ``SAVED_FOR_BACKWARD``'s (saved_table.py):
an operand is saved when the other requires grad, in every layout (``tests/test_session40_untracked_saves.py``
re-derives it: eager's gradient moves with a write into each saved operand, and with no other). A write
before the op, or into a clone of the operand, runs.
"""

from __future__ import annotations

from fusion_alias.errors import AliasInputError

# (name, tensor argument positions, their ranks or None for any rank) -> ((saved, needs), ...), as
# ``saved_table.SAVED_FOR_BACKWARD``
UNTRACKED_SAVES: dict[tuple, tuple] = {
    ("kron", (0, 1), None): ((0, (1,)), (1, (0,))),
}
UNTRACKED_SAVE_OPS = frozenset(k[0] for k in UNTRACKED_SAVES)


def refuse_untracked_save(op: str, name: str, write_op: str) -> None:
    """Raise for a save of ``name`` by ``op`` (one of ``UNTRACKED_SAVE_OPS``) that ``write_op`` then wrote."""
    raise AliasInputError(
        f"fusion_alias: {op} saves {name} for the backward, and a later in-place {write_op} writes into that "
        "memory before the backward, in a call that computes gradients. Eager PyTorch does not raise there "
        f"({op} saves its operands through views its version check does not track): its backward reads the "
        "written values, a gradient no program without the write has, which fusion_alias cannot give: not "
        f"supported. Workarounds: {op}(x.clone(), ...), or write into a clone"
    )
