"""The hidden generator's number read through a getter, a class's whole dict, ``super()`` or ``{**D}``, changed
between calls.

Note [a number read around a path, in the fuzzer]
    Session 40 (opaque_reads.py, Note [an attribute read through attrgetter]; object_shapes.py, Note [a class's
    dict read whole]; super_reads.py, Note [a number read through super()]; dict_unpacking.py, Note [a dict unpacked
    into a new one]): ``operator.attrgetter('k')(o)``, ``vars(Cfg).items()`` iterated, ``super().k`` and
    ``{**D}['k']`` with the number set between calls ran the first call's number, silently (plain ``thunder.jit``
    too; found by hand probes). A ``number_default`` or ``number_helper`` program that the forms before this one left
    as it was becomes, with probability ``P_STALE_READ`` drawn from a stream of its own (with it 0, every program is
    the one it was), one of::

        number_attrgetter        class Cfg_n0: k = 0.0; CFG_n0 = Cfg_n0()     n0 = operator.attrgetter('k')(CFG_n0)
        number_class_items       the same                                      n0 = [v for a, v in vars(Cfg_n0).items() if a == 'k'][0]
        number_super             Base_n0.k, read by Sub_n0.get()               n0 = SUB_n0.get()
        number_unpacked_dict     D_n0 = {'k': 0.0}                             n0 = {**D_n0}['k']

    hidden_numbers.py ends such a program's calls with the first variant's aliasing and another number, so a stale
    number shows.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import redrawn

P_STALE_READ = 0.3
PARENTS = ("number_default", "number_helper")
_CLASS = "import operator\n\n\nclass Cfg_{h}:\n    k = 0.0\n\n\nCFG_{h} = Cfg_{h}()\n"
_SUPER = ("class Base_{h}:\n    k = 0.0\n\n\nclass Sub_{h}(Base_{h}):\n    k = -1.0\n\n    def get(self):\n"
          "        return super().k\n\n\nSUB_{h} = Sub_{h}()\n")
_DICT = "D_{h} = {{'k': 0.0}}\n"
# kind -> (holder lines, the line installing this call's number, how the program reads it, no argument)
KINDS = {
    "number_attrgetter": (_CLASS, "    Cfg_{h}.k = hidden[{h!r}]", "operator.attrgetter('k')(CFG_{h})", None),
    "number_class_items": (_CLASS, "    Cfg_{h}.k = hidden[{h!r}]",
                           "[v for a, v in vars(Cfg_{h}).items() if a == 'k'][0]", None),
    "number_super": (_SUPER, "    Base_{h}.k = hidden[{h!r}]", "SUB_{h}.get()", None),
    "number_unpacked_dict": (_DICT, "    D_{h}['k'] = hidden[{h!r}]", "{{**D_{h}}}['k']", None),
}


def redraw(rng: random.Random, kind: str) -> str:
    """``kind``, or one of ``KINDS`` in its place where ``kind`` is among ``PARENTS`` (module Note)."""
    return redrawn(rng, kind, "numbers:stale read", PARENTS, P_STALE_READ, KINDS)
