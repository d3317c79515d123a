"""The hidden generator's number read through a call Thunder runs opaquely, changed between calls.

Note [a number read through an opaque call, in the fuzzer]
    Session 39 (opaque_reads.py, Note [a dict or an attribute read through an opaque call], Note [a container an
    opaque builtin reads]): ``vars(type(o))["k"]``, ``object.__getattribute__(o, "k")``, ``type(o).mro()[1].k`` and
    ``sum(SCALES)`` with the number set between calls ran the first call's number, silently (plain ``thunder.jit``
    too; found by hand probes). A ``number_default`` or ``number_helper`` program that hidden_own_defaults.py left as
    it was becomes, with probability ``P_OPAQUE_READ`` drawn from a stream of its own (with it 0, every program is
    the one it was), one of::

        number_vars_class        class Cfg_n0: k = 0.0; CFG_n0 = Cfg_n0()     n0 = vars(type(CFG_n0))['k']
        number_class_dict_get    the same                                      n0 = type(CFG_n0).__dict__.get('k', 0.0)
        number_vars_object       OBJ_n0.k, an instance attribute                n0 = vars(OBJ_n0)['k']
        number_getattribute      the same                                      n0 = object.__getattribute__(OBJ_n0, 'k')
        number_mro               Base_n0.k, read from a subclass's object      n0 = type(SUB_n0).mro()[1].k
        number_sum_list          SCALES_n0 = [0.0, 0.0], entry 0 set           n0 = sum(SCALES_n0)
        number_max_min_list      the same                                      n0 = max(SCALES_n0) + min(SCALES_n0)

    hidden_numbers.py ends such a program's calls with the
    first variant's aliasing and another number, so a stale number shows.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import redrawn

P_OPAQUE_READ = 0.3
PARENTS = ("number_default", "number_helper")
_CLASS = "class Cfg_{h}:\n    k = 0.0\n\n\nCFG_{h} = Cfg_{h}()\n"
_OBJECT = "class Obj_{h}:\n    def __init__(self):\n        self.k = 0.0\n\n\nOBJ_{h} = Obj_{h}()\n"
_SUBCLASS = "class Base_{h}:\n    k = 0.0\n\n\nclass Sub_{h}(Base_{h}):\n    pass\n\n\nSUB_{h} = Sub_{h}()\n"
_LIST = "SCALES_{h} = [0.0, 0.0]\n"
# kind -> (holder lines, the line installing this call's number, how the program reads it, no argument)
KINDS = {
    "number_vars_class": (_CLASS, "    Cfg_{h}.k = hidden[{h!r}]", "vars(type(CFG_{h}))['k']", None),
    "number_class_dict_get": (_CLASS, "    Cfg_{h}.k = hidden[{h!r}]", "type(CFG_{h}).__dict__.get('k', 0.0)", None),
    "number_vars_object": (_OBJECT, "    OBJ_{h}.k = hidden[{h!r}]", "vars(OBJ_{h})['k']", None),
    "number_getattribute": (_OBJECT, "    OBJ_{h}.k = hidden[{h!r}]", "object.__getattribute__(OBJ_{h}, 'k')", None),
    "number_mro": (_SUBCLASS, "    Base_{h}.k = hidden[{h!r}]", "type(SUB_{h}).mro()[1].k", None),
    "number_sum_list": (_LIST, "    SCALES_{h}[0] = hidden[{h!r}]", "sum(SCALES_{h})", None),
    "number_max_min_list": (_LIST, "    SCALES_{h}[0] = hidden[{h!r}]", "(max(SCALES_{h}) + min(SCALES_{h}))", None),
}


def redraw(rng: random.Random, kind: str) -> str:
    """``kind``, or one of ``KINDS`` in its place where ``kind`` is among ``PARENTS`` (module Note)."""
    return redrawn(rng, kind, "numbers:opaque read", PARENTS, P_OPAQUE_READ, KINDS)
