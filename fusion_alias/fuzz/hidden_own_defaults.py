"""The hidden generator's number behind a function or a class held in the jitted function's own default, or in a
keyword-only default set in place, changed between calls.

Note [a function or a class in the program's own default, in the fuzzer]
    Session 38 (mutable_defaults.py, Note [a function or a class in the jitted function's own default];
    default_contents.py, Note [a keyword default set in place]): ``def prog(a, f_n0=read_n0)`` with ``read_n0``'s
    default dict changed in place, ``def prog(a, C_n0=Cfg_n0)`` with ``Cfg_n0.k`` set, and ``read_n0.__kwdefaults__
    ['k']`` set in place ran the first call's number again, silently (plain ``thunder.jit`` too; found by a hand
    probe: hidden_function_args.py's forms hold the function in a *called* helper's default, never in ``prog``'s
    own), and so did a closure cell of a function held in a called helper's default (default_contents.py, Note
    [the closure of a function held in a default]). A ``number_default`` or ``number_helper`` program (the program's own default dict, a called helper's)
    becomes, with probability ``P_OWN_DEFAULT`` drawn from a stream of its own (with it 0, every program is the one
    it was), one of::

        number_own_default_function   def read_n0(opts=HELPER_DEFAULTS): ...   def prog(a, ..., f_n0=read_n0)
                                      n0 = f_n0()     (the number replaced in HELPER_DEFAULTS)
        number_own_default_class      class Cfg_n0: k = 0.0                    def prog(a, ..., C_n0=Cfg_n0)
                                      n0 = C_n0.k     (``Cfg_n0.k`` set)
        number_keyword_default        def read_n0(*, k=0.0): return k          n0 = read_n0()
                                      (``read_n0.__kwdefaults__['k']`` set in place)
        number_own_keyword_default    the same function held in ``prog``'s default ``f_n0=read_n0``; n0 = f_n0()
        number_default_closure        READ_n0 reads a closure cell ``k``, set through ``nonlocal`` (SET_n0)
                                      def call_n0(f=READ_n0): return f()       n0 = call_n0()
        number_type_attribute         class Cfg_n0: k = 0.0; CFG_n0 = Cfg_n0()   n0 = type(CFG_n0).k
                                      (``Cfg_n0.k`` set: type_reads.py, Note [a class reached through type()])
        number_object_class           OBJ_n0.__class__ set to a subclass of Base_n0 holding the number as ``k``
                                      n0 = (type(OBJ_n0).k if isinstance(OBJ_n0, Base_n0) else 0.0)
                                      (object_shapes.py, Note [an object's class])

    hidden_numbers.py ends such a program's calls with the first variant's aliasing and another number (its
    ``_with_extra``), so a stale number shows; source.py adds ``PARAMS``' default parameter to ``prog``.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import redrawn

P_OWN_DEFAULT = 0.4
PARENTS = ("number_default", "number_helper")
_FUNCTION = "HELPER_DEFAULTS = {{}}\n\n\ndef read_{h}(opts=HELPER_DEFAULTS):\n    return opts[{h!r}]\n"
_KEYWORD = "def read_{h}(*, k=0.0):\n    return k\n"
_CLOSURE = ("def _make_read_{h}():\n    k = 0.0\n\n    def read():\n        return k\n\n    def set_k(v):\n"
            "        nonlocal k\n        k = v\n\n    return read, set_k\n\n\nREAD_{h}, SET_{h} = _make_read_{h}()\n\n\n"
            "def call_{h}(f=READ_{h}):\n    return f()\n")
_CLASSES = ("class Base_{h}:\n    k = 0.0\n\n\n_CLASSES_{h} = {{}}\n\n\ndef class_{h}(v):\n    if v not in _CLASSES_{h}:\n"
            "        _CLASSES_{h}[v] = type('C_{h}', (Base_{h},), {{'k': v}})\n    return _CLASSES_{h}[v]\n\n\n"
            "OBJ_{h} = Base_{h}()\n")
_SET_KEYWORD = "    read_{h}.__kwdefaults__['k'] = hidden[{h!r}]"
# kind -> (holder lines, the line installing this call's number, how the program reads it, no argument)
KINDS = {
    "number_own_default_function": (_FUNCTION, "    HELPER_DEFAULTS[{h!r}] = hidden[{h!r}]", "f_{h}()", None),
    "number_own_default_class": ("class Cfg_{h}:\n    k = 0.0\n", "    Cfg_{h}.k = hidden[{h!r}]", "C_{h}.k", None),
    "number_keyword_default": (_KEYWORD, _SET_KEYWORD, "read_{h}()", None),
    "number_own_keyword_default": (_KEYWORD, _SET_KEYWORD, "f_{h}()", None),
    "number_default_closure": (_CLOSURE, "    SET_{h}(hidden[{h!r}])", "call_{h}()", None),
    "number_type_attribute": ("class Cfg_{h}:\n    k = 0.0\n\n\nCFG_{h} = Cfg_{h}()\n", "    Cfg_{h}.k = hidden[{h!r}]",
                              "type(CFG_{h}).k", None),
    "number_object_class": (_CLASSES, "    OBJ_{h}.__class__ = class_{h}(hidden[{h!r}])",
                            "(type(OBJ_{h}).k if isinstance(OBJ_{h}, Base_{h}) else 0.0)", None),
}
# kind -> the default parameter ``prog`` ends with
PARAMS = {"number_own_default_function": "f_{h}=read_{h}", "number_own_default_class": "C_{h}=Cfg_{h}",
          "number_own_keyword_default": "f_{h}=read_{h}"}


def params(hidden) -> list[str]:
    """The default parameters ``prog`` ends with for the hidden values ``(h, kind, ...)`` (module Note)."""
    return [PARAMS[k].format(h=h) for h, k, *_ in hidden if k in PARAMS]


def redraw(rng: random.Random, kind: str) -> str:
    """``kind``, or one of ``KINDS`` in its place where ``kind`` is among ``PARENTS`` (module Note)."""
    return redrawn(rng, kind, "numbers:own default", PARENTS, P_OWN_DEFAULT, KINDS)
