"""Inputs whose aliasing changes from call to call, and tensors reached without arguments.

Every argument and hidden tensor is a *slot* with a fixed shape and its own
base tensor of that shape. A variant (the aliasing of one call, Note [calls
with changing aliasing]) gives each slot either its own base (independent) or
an expression over another slot's base, a *host* of shape (4, 4):

    slot shape   expressions over a host xj
    (4, 4)       xj, xj.t(), xj[1].expand(4, 4)
    (2, 4)       xj[1:3], xj[::2], xj[:, 1:3].t(), xj[2].expand(2, 4)
    (4,)         xj[1], xj[:, 2], xj.diagonal(), xj[1, 2].expand(4)
    ()           xj[1, 2]

(the expanded ones have internal overlap: eager rejects most writes into them,
accepts some, e.g. ``zero_()``; a program compiled for a plain layout must follow).

The shapes are the same in every variant, so a compiler that keys its cache on
shapes alone sees one program called with different memory sharing.

* ``calls``: 2-3 arguments; variant 0 independent, then the same tensor twice,
  then a transpose of it, then a random aliasing; the call sequence ends with
  variant 0 again; sometimes (``P_REVISIT``) a longer order that comes back to each aliasing after others
  (Note [calls that come back to an aliasing]).
* ``hidden``: 1-2 arguments and 1-2 hidden tensors (a global, a global dict
  entry, a closure cell, a module buffer, an attribute of an argument object:
  Note [hidden tensors, rendered]); variant 0 mostly independent, later
  variants make a hidden tensor and an argument share memory.
"""

from __future__ import annotations

import dataclasses
import random

from fusion_alias.fuzz import disjoint_views, hidden_numbers
from fusion_alias.fuzz.program import ATTR_HOLDER, HIDDEN_KINDS, PARAM_NAMES, Variant

HOST_SHAPE = (4, 4)
_VIEWS = {
    (4, 4): ("{x}", "{x}.t()", "{x}[1].expand(4, 4)"),
    (2, 4): ("{x}[1:3]", "{x}[::2]", "{x}[:, 1:3].t()", "{x}[2].expand(2, 4)"),
    (4,): ("{x}[1]", "{x}[:, 2]", "{x}.diagonal()", "{x}[1, 2].expand(4)"),
    (): ("{x}[1, 2]",),
}


def _own(i: int) -> str:
    return f"x{i}"


def _random_variant(rng: random.Random, shapes: list[tuple[int, ...]], p_alias: float) -> list[str]:
    """An expression per slot: its own base, or with probability ``p_alias`` a view of a host's base."""
    hosts = [i for i, s in enumerate(shapes) if s == HOST_SHAPE]
    exprs = []
    for i, shape in enumerate(shapes):
        others = [j for j in hosts if j != i]
        if others and rng.random() < p_alias:
            exprs.append(rng.choice(_VIEWS[shape]).format(x=_own(rng.choice(others))))
        else:
            exprs.append(_own(i))
    return exprs


def _pair_variant(rng: random.Random, shapes: list[tuple[int, ...]], template: str) -> list[str]:
    """Independent slots except one host-shaped slot that is ``template`` of another host's base."""
    exprs = [_own(i) for i in range(len(shapes))]
    hosts = [i for i, s in enumerate(shapes) if s == HOST_SHAPE]
    if len(hosts) >= 2:
        i, j = rng.sample(hosts, 2)
        exprs[max(i, j)] = template.format(x=_own(min(i, j)))
    return exprs


# Note [calls that come back to an aliasing]
#     Session 35: a call order of ``calls`` visits each aliasing once after the first two calls, and comes back only
#     to variant 0, at the end. A program kept per aliasing must be picked again for an aliasing seen two or more
#     calls before, after others compiled theirs (``f(x, x[0])``, ``f(x, y)``, ``f(x, x[0])``, ``f(x, x.t())``, ...).
#     With probability ``P_REVISIT`` the order is instead 8-12 calls drawn over all the variants, each variant at
#     least once, no variant twice in a row, ending with variant 0; drawn from a stream of its own seeded from
#     ``rng``'s state without drawing from it, after the variants: with ``P_REVISIT`` 0 every program is the one it
#     was (older tests pin that).
P_REVISIT = 0.3


def _revisits(rng: random.Random, nvariants: int) -> tuple[int, ...]:
    """A call order over ``nvariants`` variants that comes back to each (Note [calls that come back to an
    aliasing]); () where the default order stays."""
    s = random.Random(str(rng.getstate()[1][:16]) + ":revisit")
    if P_REVISIT <= 0 or nvariants < 2 or s.random() >= P_REVISIT:
        return ()
    order, target = [0, 0] + list(range(1, nvariants)), s.randint(8, 12)
    while len(order) < target - 1 or order[-1] == 0:
        order.append(s.choice([v for v in range(nvariants) if v != order[-1]]))
    return tuple(order) + (0,)


def calls_inputs(rng: random.Random) -> dict:
    nargs = rng.choice((2, 2, 3))
    shapes = [HOST_SHAPE, HOST_SHAPE] + [rng.choice(list(_VIEWS)) for _ in range(nargs - 2)]
    exprs = [[_own(i) for i in range(nargs)]]
    exprs.append(_pair_variant(rng, shapes, "{x}"))  # the same tensor twice
    exprs.append(_pair_variant(rng, shapes, "{x}.t()"))  # ... and transposed
    if rng.random() < 0.5:
        exprs.append(_random_variant(rng, shapes, 0.6))
    if rng.random() < 0.3:  # not always from independent first
        exprs[0], exprs[1] = exprs[1], exprs[0]
    params = PARAM_NAMES[:nargs]
    variants = [Variant(args=tuple(zip(params, e))) for e in exprs]
    fields = {
        "bases": tuple((_own(i), s) for i, s in enumerate(shapes)),
        "args": variants[0].args,
        "variants": tuple(variants[1:]),
    }
    order = _revisits(rng, len(variants))
    # (a call on disjoint views of one base: Note [disjoint views of one base, after independent tensors])
    return disjoint_views.finish_inputs(rng, {**fields, "call_order": order} if order else fields)


def hidden_inputs(rng: random.Random) -> dict:
    fields = _hidden_tensors(rng)
    number = hidden_numbers.draw(rng, 1 + len(fields["variants"]))  # (Note [a number kept outside the function, ...])
    if number is None:
        return fields
    kind, values = number
    h = hidden_numbers.NAME
    variants = tuple(dataclasses.replace(v, hidden=v.hidden + ((h, e),)) for v, e in zip(fields["variants"], values[1:]))
    return {**fields, "hidden": fields["hidden"] + ((h, kind, values[0]),), "variants": variants}


def _hidden_tensors(rng: random.Random) -> dict:
    nargs = rng.choice((1, 2, 2))
    nhidden = rng.choice((1, 1, 2))
    kinds = [rng.choice(HIDDEN_KINDS) for _ in range(nhidden)]
    shapes = [HOST_SHAPE] + [rng.choice(list(_VIEWS)) for _ in range(nargs - 1)]
    shapes += [rng.choice((HOST_SHAPE, HOST_SHAPE, (2, 4), (4,), ())) for _ in range(nhidden)]
    if all(s != HOST_SHAPE for s in shapes[nargs:]) and rng.random() < 0.5:
        shapes[nargs] = HOST_SHAPE  # so that an argument can be a view of a hidden tensor
    nslots = nargs + nhidden
    first = _random_variant(rng, shapes, 0.0 if rng.random() < 0.7 else 0.4)
    later = []
    for _ in range(rng.choice((1, 2, 2))):
        for _attempt in range(10):  # a variant where a hidden tensor and an argument share memory
            e = _random_variant(rng, shapes, 0.7)
            if _shares(e, nargs, nslots):
                break
        later.append(e)
    hidden_names = [f"h{k}" for k in range(nhidden)]
    params = list(PARAM_NAMES[:nargs])
    attrs = [h for h, k in zip(hidden_names, kinds) if k == "attr"]

    def variant(exprs: list[str]) -> Variant:
        args = list(zip(params, exprs[:nargs]))
        if attrs:
            args.append((ATTR_HOLDER, f"Box({', '.join(f'{h}={h}' for h in attrs)})"))
        return Variant(args=tuple(args), hidden=tuple(zip(hidden_names, exprs[nargs:])))

    v0 = variant(first)
    return {
        "bases": tuple((_own(i), s) for i, s in enumerate(shapes)),
        "args": v0.args,
        "hidden": tuple((h, k, e) for (h, e), k in zip(v0.hidden, kinds)),
        "variants": tuple(variant(e) for e in later),
    }


def _shares(exprs: list[str], nargs: int, nslots: int) -> bool:
    """Whether some hidden slot's expression and some argument's use the same base."""

    def base_of(e: str) -> str:
        return e.split("[")[0].split(".")[0]

    arg_bases = {base_of(e) for e in exprs[:nargs]}
    return any(base_of(e) in arg_bases for e in exprs[nargs:nslots])
