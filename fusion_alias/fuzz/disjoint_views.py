"""A call of the ``calls`` generator whose arguments are disjoint views of one base, after calls on independent tensors.

Note [disjoint views of one base, after independent tensors]
    Session 44 (guard.py, Note [inputs that share a storage, in a call with gradients]; refusals/version_counters.py,
    Note [one version counter per storage]): a program compiled for independent tensors and called later with disjoint
    views of one base (``a, b = x[0:2], x[2:4]``) reused the program, whose inputs overlap in neither call, and returned
    a gradient where eager raises at backward (``a.sigmoid_()`` saves ``a``; ``b.mul_(2)`` moves the one version
    counter of ``x``). No generator made such a call: ``calls``' variants alias by the same tensor, a transpose, or
    overlapping views of a host. With probability ``P_DISJOINT`` a ``calls`` program gets one more base ``xd``, a flat
    tensor holding every argument side by side (a gap of 0-2 elements between them, a flat parameter buffer's
    layout), and a variant passing each argument as its piece of it::

        a = xd[0:16].view(4, 4)
        b = xd[17:33].view(4, 4)
        c = xd[33]                       # a 0-d argument

    called right after the first two calls (of the variant whose arguments are independent, made first where the
    program's variant 0 is another), then as before: ``(i, i, new, ...)``. Every other call is the one it was.

    The oracle's rule for an eager error at backward (``both-raised``, not comparable: Note [gradients in the
    fuzzer], oracle.py) cannot see the class, a gradient where eager raises at backward; such programs render
    ``STRICT_BACKWARD_SOURCE`` after the driver (also every program with ``--strict-backward``): an eager error at
    backward counts as a rejection the jitted call (its forward or its backward) must make too, and a jitted call
    whose backward ran is a missed rejection (not where eager's error says a derivative "is not implemented": eager
    lacks it, which is no rejection). Drawn from a stream of its own seeded from ``rng``'s state without
    drawing from it: with ``P_DISJOINT`` 0 every program is the one it was.
"""

from __future__ import annotations

import math
import random

from fusion_alias.fuzz.own_stream_forms import own_stream
from fusion_alias.fuzz.program import Variant

P_DISJOINT = 0.3  # of a ``calls`` program (tests set it to 0: the streams before session 45)
BASE = "xd"
TAG = ("strict_backward", "disjoint views")
STRICT_BACKWARD = False  # set by the command line's --strict-backward: every program renders the source below


def finish_inputs(rng: random.Random, fields: dict) -> dict:
    """``fields`` of a ``calls`` program, with the form's base and variant (module Note), or as they were."""
    s = own_stream(rng, "disjoint views")
    if P_DISJOINT <= 0 or s.random() >= P_DISJOINT:
        return fields
    params = [p for p, _ in fields["args"]]
    shapes = [shape for _, shape in fields["bases"]]
    exprs, at = [], 0
    for shape in shapes:
        at += s.choice((0, 0, 1, 2))
        n = math.prod(shape)
        exprs.append(f"{BASE}[{at}]" if shape == () else f"{BASE}[{at}:{at + n}].view{shape}" if len(shape) > 1
                     else f"{BASE}[{at}:{at + n}]")
        at += n
    variants = (Variant(args=fields["args"]),) + fields["variants"]
    new = len(variants)
    own = [i for i, v in enumerate(variants) if all(e == f"x{k}" for k, (_, e) in enumerate(v.args))]
    first = own[0] if own else 0
    order = fields.get("call_order") or ((0, 0) + tuple(range(1, new)) + ((0,) if new > 1 else ()))
    order = (first, first, new) + tuple(order[2:]) + (() if order[2:] else (0,))
    return {**fields, "bases": fields["bases"] + ((BASE, (at + s.choice((0, 1)),)),),
            "variants": fields["variants"] + (Variant(args=tuple(zip(params, exprs))),),
            "call_order": order, "tags": (TAG,)}


def strict(p) -> bool:
    """Whether ``p``'s driver counts an eager error at backward as a rejection (module Note)."""
    return STRICT_BACKWARD or any(key == "strict_backward" for key, _ in p.tags)  # (also saving_inplace.py's TAG)


# (appended to the driver: Note [disjoint views of one base, after independent tensors]; else the source is as before)
STRICT_BACKWARD_SOURCE = '''

_run_without_strict_backward = _run


def _run(fn, variant, state=None, wide=False):
    """As before, but an eager error at backward is an error of the call (the jitted call must raise too)."""
    got = _run_without_strict_backward(fn, variant, state, wide)
    if fn is prog and got[6] == "backward" and "not implemented" not in str(got[5]):  # (eager lacks a derivative)
        return got[:6] + ("forward or backward (eager raised at backward)",) + got[7:]
    return got
'''
