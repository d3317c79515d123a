"""The hidden generator's numbers kept outside the function: in a global list, a global dict, or a dict that is a
default argument, another number on each call.

Note [a number kept outside the function, changed between calls]
    Session 35 (mutable_defaults.py, Note [a number read from a default argument's container]; errors.py, Note [a
    number the function changes and reads]): no generator read a Python number from a list or a dict that outlives
    the call, changed between calls (the modules generator's ``cfg`` attribute aside), nor one the function changes
    itself, and a default argument holding a dict was read as a constant, silently. With probability ``P_NUMBER`` a
    hidden program holds a number ``n0``, rendered by kind (source.py installs each call's number before the call)::

        number_list      NUMS_n0 = [0.0]     n0 = NUMS_n0[0]
        number_dict      OPTS = {}           n0 = OPTS['n0']
        number_default   DEFAULTS = {}       def prog(a, ..., opts=DEFAULTS): n0 = opts['n0']
        number_helper    HELPER_DEFAULTS = {}; def read_n0(opts=HELPER_DEFAULTS): return opts['n0']
                                             n0 = read_n0()
        number_array     ARR_n0 = numpy.array([0.0])     n0 = float(ARR_n0[0])
                         (or an ``array.array``, a ``deque``, a ``mappingproxy`` of a dict: ``CONTAINERS``)
        number_iterator  ITERS = {}; ITERS['n0'] = iter([this call's number])    n0 = next(ITERS['n0'])

    another number on each aliasing variant (the calls come back to variant 0: a stale number shows), and the body
    ends with statements reading it (``t = a * n0 + n0``, ``a.add_(n0)``); now and then (``P_CHANGED``) with one
    that changes it in its holder, which fusion_alias must refuse by name (``Stmt.must_refuse``). Drawn from a stream
    of its own seeded from ``rng``'s state without drawing from it: with ``P_NUMBER`` 0 every program is the one it
    was (older tests pin that).

    ``number_helper`` (session 36; default_contents.py, Note [a default container of a function the program
    calls]): a ``number_default`` program becomes one with probability ``P_HELPER``, drawn last from the form's
    stream (with it 0 every program is the one it was), and never changes its number itself. ``number_array``
    (session 36; default_contents.py, Note [a numpy array changed in place]) likewise, of a ``number_list``
    program with probability ``P_ARRAY``. ``number_iterator`` (session 36; outside_reads.py, Note [an iterator that
    outlives the call]), of a ``number_dict`` program with probability ``P_ITERATOR``: a program fusion_alias must
    refuse by name (its ``t_n0`` statement carries ``ITERATOR``).

    Session 37 (helper) nests five more forms under these, each drawn last from a stream of its own (``_extra``;
    with its probability 0 every program is the one it was): a ``bytearray``, a writable ``memoryview`` or a
    dict's view in place of a ``number_array`` container (hidden_views.py), a ``deque`` given as an argument
    (hidden_deque_args.py), a method's, a static or class method's or a module ``forward``'s default in place of
    ``number_helper``'s function (hidden_methods.py), an iterator in an attribute, an argument or the function's
    closure in place of ``number_iterator``'s global dict (hidden_iterators.py); and, in place of a method, a
    function given as an argument (hidden_function_args.py, the class of a fix of that session). Such a program
    ends its calls with one more variant, the first one's aliasing with another number (``_with_extra``): another
    aliasing compiles anew, so only a call that reuses a program shows a stale number (with it, 26 to 30 of 30
    programs of each form failed on 495c3bb; without it, 1 of 20 of the views form, seed 37001). Session 38 (helper)
    nests one more, drawn last: a function or a class in ``prog``'s own default, or a keyword-only default set in
    place, in place of a ``number_default`` or ``number_helper`` program (hidden_own_defaults.py). Session 39
    (helper) one more after it: a number read through a call Thunder runs opaquely (hidden_opaque_reads.py). Session 40
    one more after that: a number read through ``operator.attrgetter``, a class's whole dict, ``super()`` or ``{**D}``
    (hidden_stale_reads.py). Session 41 one more after that: a number read from a class's dict the interpreter
    copies, or through ``super()`` in a module (hidden_copied_reads.py).
"""

from __future__ import annotations

import dataclasses
import random

from fusion_alias.fuzz import (hidden_copied_reads, hidden_deque_args, hidden_function_args, hidden_iterators,
                               hidden_methods, hidden_opaque_reads, hidden_own_defaults, hidden_stale_reads,
                               hidden_views)
from fusion_alias.fuzz.own_stream_forms import own_stream
from fusion_alias.fuzz.program import ATTR_HOLDER, Program, Stmt

P_NUMBER = 0.25
P_CHANGED = 0.2
P_HELPER = 0.5
HELPER = "number_helper"
P_ARRAY = 0.5
ARRAY = "number_array"
# the containers Thunder's prologue does not unpack (default_contents.py, Note [a mutable sequence Thunder does not
# unpack]): kind -> (holder lines, the line installing this call's number), each read as ``float(ARR_n0[0])``
CONTAINERS = {
    ARRAY: ("import numpy\nARR_{h} = numpy.array([0.0])", "    ARR_{h}[0] = hidden[{h!r}]"),
    "number_array_module": ("import array\nARR_{h} = array.array('d', [0.0])", "    ARR_{h}[0] = hidden[{h!r}]"),
    "number_deque": ("import collections\nARR_{h} = collections.deque([0.0])", "    ARR_{h}[0] = hidden[{h!r}]"),
    "number_mappingproxy": ("import types\nARR_DICT_{h} = {{0: 0.0}}\nARR_{h} = types.MappingProxyType(ARR_DICT_{h})",
                            "    ARR_DICT_{h}[0] = hidden[{h!r}]"),
}
P_ITERATOR = 0.25
ITERATOR = "number_iterator"
ITERATOR_REFUSAL = "iterator that outlives the call"
KINDS = ("number_list", "number_dict", "number_default")
NAME = "n0"
_VALUES = ("0.5", "-1.5", "2.0", "0.25", "3.0", "-0.75")
CHANGED = "the function changes a Python number it reads from an object that outlives the call"


def draw(rng: random.Random, nvariants: int) -> tuple[str, list[str]] | None:
    """(kind, the number of each variant) or None (module Note); ``rng`` is not drawn from."""
    s = own_stream(rng, "numbers")
    if P_NUMBER <= 0 or s.random() >= P_NUMBER:
        return None
    values = s.sample(_VALUES, min(len(_VALUES), nvariants))
    kind = s.choice(KINDS)
    if kind == "number_default" and P_HELPER > 0 and s.random() < P_HELPER:
        kind = HELPER
    elif kind == "number_list" and P_ARRAY > 0 and s.random() < P_ARRAY:
        kind = s.choice(tuple(CONTAINERS))
    elif kind == "number_dict" and P_ITERATOR > 0 and s.random() < P_ITERATOR:
        kind = ITERATOR
    kind = hidden_views.redraw(rng, kind, CONTAINERS)  # (session 37: the module Note's last paragraph)
    kind = hidden_deque_args.redraw(rng, kind, CONTAINERS)
    kind = hidden_methods.redraw(rng, kind, (HELPER,))
    kind = hidden_iterators.redraw(rng, kind, (ITERATOR,))
    kind = hidden_function_args.redraw(rng, kind, hidden_methods.KINDS)
    kind = hidden_own_defaults.redraw(rng, kind)  # (session 38: the module Note's last paragraph)
    kind = hidden_opaque_reads.redraw(rng, kind)  # (session 39: the module Note's last paragraph)
    kind = hidden_stale_reads.redraw(rng, kind)  # (session 40: the module Note's last paragraph)
    kind = hidden_copied_reads.redraw(rng, kind)  # (session 41: the same)
    return kind, values


def _extra(h: str, kind: str) -> tuple[str, str, str, str | None] | None:
    """(holder lines, install line, access, argument or None) of a session 37 kind; None for any other."""
    if kind in hidden_methods.KINDS:
        return (hidden_methods.holder(h, kind), hidden_methods.INSTALL.format(h=h),
                hidden_methods.KINDS[kind][-1].format(h=h), None)
    for form in _FORMS:
        if kind in form.KINDS:
            return tuple(None if part is None else part.format(h=h) for part in form.KINDS[kind])
    return None


_FORMS = (hidden_views, hidden_deque_args, hidden_iterators, hidden_function_args, hidden_own_defaults,
          hidden_opaque_reads, hidden_stale_reads, hidden_copied_reads)  # (4-tuples)
CLOSURE_KINDS = ("closure", hidden_iterators.CLOSURE)  # the hidden kinds held in a cell of ``_make_prog()``


def is_number(kind: str) -> bool:
    return kind in KINDS or kind in (HELPER, ITERATOR) or kind in CONTAINERS or _extra(NAME, kind) is not None


def access(h: str, kind: str) -> str:
    """How the program reads number ``h`` of ``kind`` (source.py)."""
    extra = _extra(h, kind)
    if extra:
        return extra[2]
    if kind in CONTAINERS:
        return f"float(ARR_{h}[0])"
    return {"number_list": f"NUMS_{h}[0]", "number_dict": f"OPTS[{h!r}]", "number_default": f"opts[{h!r}]",
            HELPER: f"read_{h}()", ITERATOR: f"next(ITERS[{h!r}])"}[kind]


def holder(h: str, kind: str) -> str:
    """The module-level line of its holder (source.py)."""
    extra = _extra(h, kind)
    if extra:
        return extra[0]
    if kind in CONTAINERS:
        return CONTAINERS[kind][0].format(h=h)
    return {"number_list": f"NUMS_{h} = [0.0]", "number_dict": "OPTS = {}", "number_default": "DEFAULTS = {}",
            HELPER: f"HELPER_DEFAULTS = {{}}\n\n\ndef read_{h}(opts=HELPER_DEFAULTS):\n    return opts[{h!r}]\n",
            ITERATOR: "ITERS = {}"}[kind]


def install(h: str, kind: str) -> str:
    """``install_hidden``'s line putting this call's number in its holder (source.py)."""
    extra = _extra(h, kind)
    if extra:
        return extra[1]
    if kind in CONTAINERS:
        return CONTAINERS[kind][1].format(h=h)
    return {"number_list": f"    NUMS_{h}[0] = hidden[{h!r}]", "number_dict": f"    OPTS[{h!r}] = hidden[{h!r}]",
            "number_default": f"    DEFAULTS[{h!r}] = hidden[{h!r}]",
            HELPER: f"    HELPER_DEFAULTS[{h!r}] = hidden[{h!r}]",
            ITERATOR: f"    ITERS[{h!r}] = iter([hidden[{h!r}]])"}[kind]


def finish(p: Program) -> Program:
    """``p`` with statements reading its number at the end (module Note); ``p`` where it holds none."""
    kinds = [k for h, k, _ in p.hidden if h == NAME and is_number(k)]
    tensors = [a for a in p.params if a != ATTR_HOLDER]
    if not kinds or not tensors:
        return p
    s = random.Random(p.name + ":numbers")
    x = s.choice(tensors)
    stmts = list(p.stmts)
    t = f"t_{NAME}"
    refusal = {ITERATOR: ITERATOR_REFUSAL, **dict.fromkeys(hidden_iterators.KINDS, hidden_iterators.REFUSAL)}
    stmts.append(Stmt(f"{t} = {x} * {NAME} + {NAME}", target=t, reads=(x,), must_refuse=refusal.get(kinds[0])))
    returns = p.returns + (t,)
    if s.random() < 0.5:
        stmts.append(Stmt(f"{x}.add_({NAME})", reads=(x,), writes=x))
        returns += (x,) if x not in returns else ()
    if s.random() < P_CHANGED and kinds[0] in KINDS:
        stmts.append(Stmt(f"{access(NAME, kinds[0])} = {NAME} + 1.0", must_refuse=CHANGED))
    p = p.replace(stmts=tuple(stmts), returns=returns)
    extra = _extra(NAME, kinds[0])
    return p if extra is None else _with_extra(p, kinds[0], extra[3])


def _with_extra(p: Program, kind: str, argument: str | None) -> Program:
    """A session 37 kind's program: its holder given as the last argument where it is one, and a last variant
    that is the first one's aliasing with another number, so that a stale number reuses the first call's program
    and shows (the number of each other variant comes with another aliasing, which compiles anew)."""
    if argument:
        arg = ((next(form.PARAM for form in _FORMS if kind in form.KINDS), argument),)
        p = p.replace(args=p.args + arg, variants=tuple(dataclasses.replace(v, args=v.args + arg) for v in p.variants))
    first = p.all_variants[0]
    used = {e for v in p.all_variants for h, e in v.hidden if h == NAME}
    other = next(e for e in _VALUES if e not in used)
    hidden = tuple((h, other if h == NAME else e) for h, e in first.hidden)
    return p.replace(variants=p.variants + (dataclasses.replace(first, hidden=hidden),))
