"""``F.nll_loss`` with eager's signature and defaults.

Note [nll_loss's ignore_index]
------------------------------
Thunder 0.2.6's ``nll_loss`` symbol takes ``(input, target, weight, ignore_index, reduction)`` with
``ignore_index=None``, where eager's ``F.nll_loss`` is ``(input, target, weight, size_average,
ignore_index=-100, reduce, reduction)``. So ``F.nll_loss(logp, target)``, the usual spelling, failed: the
forward with "nll_loss_nd(): argument 'ignore_index' (position 5) must be int, not NoneType", a call that
computes gradients with "None had an unexpected type" (plain ``thunder.jit`` too); and a fourth positional
argument meant ``size_average`` to eager and ``ignore_index`` to Thunder. The lookaside takes eager's
signature and calls Thunder's symbol with eager's defaults::

    F.nll_loss(logp, t)          ->  nll_loss(logp, t, None, -100, "mean")   (a target of -100 is ignored)

The deprecated ``size_average``/``reduce`` are refused by name (use ``reduction=``), as Thunder's
``cross_entropy`` does. ``reduction="sum"`` is traced as the sum of ``reduction="none"``: Thunder's own "sum"
failed in the backward ("expected scalar type Float but found Double", its total weight is None there).
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch

from fusion_alias.wrapped_lookasides import wrap_lookasides


def _nll_loss(previous):
    def traced(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        if size_average is not None or reduce is not None:
            raise NotImplementedError(
                f"fusion_alias: F.nll_loss with the deprecated size_average={size_average!r} or reduce={reduce!r} is "
                "not supported (Thunder 0.2.6): pass reduction='mean', 'sum' or 'none' instead")
        if reduction == "sum":  # (Thunder's "sum" hands its backward no total weight: "expected scalar type Float
            # but found Double"; the sum of the unreduced losses is the same sum)
            return ltorch.sum(previous(input, target, weight, ignore_index, "none"))
        return previous(input, target, weight, ignore_index, reduction)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of Note [nll_loss's ignore_index]."""
    wrap_lookasides(executor, torch.nn.functional.nll_loss, _nll_loss)
