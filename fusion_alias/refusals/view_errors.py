"""The errors eager PyTorch raises for in-place writes and reads of views under autograd, in its words and
with workarounds (saved_versions.py, Note [writes into views made under no_grad]; returned_views.py)."""

from __future__ import annotations

from fusion_alias.errors import AliasInputError


def refuse_no_grad_view_write(op: str, name: str) -> None:
    raise AliasInputError(
        f"fusion_alias: in-place {op} into {name}, a view made under torch.no_grad(), with grad mode enabled, in a "
        "call that computes gradients. Eager PyTorch raises: \"A view was created in no_grad mode and is being "
        "modified inplace with grad mode enabled.\" Workarounds: make the view outside no_grad, write under "
        "no_grad, or clone the view"
    )


def refuse_no_grad_view_read(op: str, name: str) -> None:
    raise AliasInputError(
        f"fusion_alias: {op} reads {name}, a view made under torch.no_grad() whose memory was written in place "
        "since, with grad mode enabled, in a call that computes gradients. Eager PyTorch raises: \"A view was "
        "created in no_grad mode and its base or another view of its base has been modified inplace with grad "
        "mode enabled.\" Workarounds: make the view after the write, or read it through .detach()"
    )


def refuse_no_grad_view_output(name: str) -> None:
    raise AliasInputError(
        f"fusion_alias: the program returns {name}, a view made under torch.no_grad() of a tensor that requires "
        "grad, in a call that computes gradients: not supported. Eager's view requires grad but passes no gradient "
        "back; the compiled program's output would pass one. Workarounds: return it .detach()ed, or make the view "
        "with grad mode enabled. (In a program that writes nothing, a reshape or flatten counts as a view here.)")


def refuse_multi_output_write(op: str, name: str) -> None:
    raise AliasInputError(
        f"fusion_alias: in-place {op} into {name}, a view returned by unbind/chunk/split (an op that "
        "returns several views), in a call that computes gradients. Eager PyTorch raises: \"... is a view "
        "and is being modified inplace. This view is the output of a function that returns multiple "
        "views. Such functions do not allow the output views to be modified inplace.\" Workarounds: "
        "clone the view before the in-place op, or use the out-of-place op"
    )
