"""Random draws keep the program's order.

Note [random draws in program order]
------------------------------------
Each random op (``dropout``, ``rand_like``, ``randn``, ``multinomial``, ...) takes the next numbers
of the one generator torch keeps per device. Two draws that swap places swap their numbers, so
the order of the draws is part of the result, as much as a data edge is: under
``torch.manual_seed(0)`` eager and plain ``thunder.jit`` give::

    def f(x, y):
        return F.dropout(x.exp(), .5), F.dropout(y, .5)

the first mask to the first draw. The partitioner places a node that runs outside regions after
the last region it follows (partition.py), so ``dropout(y)``, which follows none, ran before the
region that computes ``x.exp()`` and before ``dropout(exp(x))``: the two masks swapped (session 27
hand probe; plain ``thunder.jit`` keeps eager's order).

Here each draw gets an ``order`` edge from the draw before it in the trace. It orders like a data
edge and is never a hazard: a node after it may share its region (``UNSAFE`` is not set), and a
draw after another draw sits at the same or a later level, where the nodes outside regions keep
their program order (``partition._in_order``). Since every edge still points forward (``u < v``),
the levels stay a topological order and no region can come to need a later draw's value before an
earlier draw runs. Random ops run outside regions: fusion_alias fuses none (nvFuser's generator is
not torch's, so a fused draw could not give eager's numbers anyway).

A draw is a symbol tagged ``OpTags.RANDOM_OP`` (``prims.uniform``, ``prims.multinomial``,
``get_and_update_rng_state``), or one named as a random op of ``thunder.torch`` or of those prims
(by the time the pass sees the trace, the torch executor has claimed ``prims.uniform`` as its own
``uniform`` symbol, without tags or subsymbols; ``randn`` has no tag at all), or a composite one of
whose subsymbols is, at any depth (``ltorch.dropout`` draws through ``uniform_like``).
"""

from __future__ import annotations

from collections.abc import Sequence

from thunder.core.prims import OpTags
from thunder.core.symbol import BoundSymbol

_RANDOM = OpTags.RANDOM_OP
_DRAW_NAMES = frozenset((
    "uniform", "uniform_like", "uniform_philox", "multinomial", "multinomial_helper", "get_and_update_rng_state",
    "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm", "normal", "bernoulli",
    "exponential", "exponential_", "rrelu", "rrelu_", "dropout", "dropout1d", "dropout2d", "dropout3d",
    "alpha_dropout", "feature_alpha_dropout", "feature_dropout", "native_dropout",
))


def draws(bsym: BoundSymbol) -> bool:
    """Whether running ``bsym`` takes numbers from torch's random generator (module Note)."""
    sym = bsym.sym
    if sym.name in _DRAW_NAMES:
        return True
    tags = sym.tags
    if tags and _RANDOM in tags:
        return True
    return any(draws(s) for s in bsym.subsymbols)


def draw_order_pairs(bsyms: Sequence[BoundSymbol], opaque: Sequence[bool]) -> list[tuple[int, int]]:
    """``(u, v)`` for each draw ``v`` and the draw ``u`` before it, in node order (module Note). Only
    nodes that run outside regions (``opaque``) can draw: fusion_alias fuses no random op."""
    previous = None
    pairs = []
    for i, outside in enumerate(opaque):
        if outside and draws(bsyms[i]):
            if previous is not None:
                pairs.append((previous, i))
            previous = i
    return pairs
