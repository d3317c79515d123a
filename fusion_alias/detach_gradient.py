"""``x.detach()`` as a constant for Thunder's autodiff: no gradient, not a zero one.

Note [a detached output sends no zero gradient back]
----------------------------------------------------
Thunder 0.2.6 registers ``torch.detach`` from torch, with a VJP (``detach_vjp``) that asks torch's autograd for the
gradient of ``detach``: zeros. So a value the program returns only detached still has a backward in Thunder's one
autograd node: PyTorch hands the node zeros for that output, ``detach_vjp`` passes zeros on, and the ops before
multiply them by their partials. Eager's ``detach()`` ends the graph: the ops before are never visited. Where a
partial is infinite or 0/0 the zero becomes NaN in a leaf's gradient (plain ``thunder.jit`` alike)::

    def f(b, c):                          # b = x * 1, a row of x holds NaN (fuzz --special-values --grad
        t0 = b.amax(1, keepdim=True)      # seed 20970 #21, calls)
        return c * 2, t0.detach()
    # eager: x.grad None; was: NaN in the NaN row (amax's backward: 0 * (b == amax) / count, count 0 there)

Listed among Thunder's non-differentiable symbols, ``detach`` is copied into the joint trace as it is and puts no
gradient, so nothing reaches the ops before through it: ``x.grad`` None as in eager, and a leaf read also through
another path gets that path's gradient only. The forward trace keeps the same ``torch.detach`` symbol (the refusals
read it by name). Registered once, on import, for every Thunder compilation in the process (as flip_gradient.py's
rule), where it changes only gradients that were zeros or NaN.
"""

from __future__ import annotations

import thunder.torch as ltorch
from thunder.core.transforms import nondifferentiable_vjp_symbols


def register() -> None:
    """Make ``torch.detach`` non-differentiable for Thunder's autodiff (module Note); idempotent."""
    nondifferentiable_vjp_symbols.add(ltorch.detach.id)
