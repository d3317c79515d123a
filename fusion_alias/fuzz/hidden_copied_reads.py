"""The hidden generator's number read from a class's dict the interpreter copies, or through ``super()`` in a
module, changed between calls.

Note [a number read from a copy the interpreter makes, in the fuzzer]
    Session 41 (opaque_reads.py, Note [a class's dict the interpreter copies]; super_reads.py, Note [a number a
    module reads through super()]): ``dict(vars(Cfg))['k']``, ``{**vars(Cfg)}['k']`` and ``super().k`` in a method of
    an ``nn.Module`` with the number set between calls ran the first call's number, silently (plain ``thunder.jit``
    too; found by hand probes, the neighbours of session 40's forms). A ``number_default`` or ``number_helper``
    program that the forms before this one left as it was becomes, with probability ``P_COPIED_READ`` drawn from a
    stream of its own (with it 0, every program is the one it was), one of::

        number_class_dict_copy       class Cfg_n0: k: float = 0.0            n0 = dict(vars(Cfg_n0))['k']
        number_unpacked_class_dict   the same                                n0 = {**vars(Cfg_n0)}['k']
        number_module_super          BaseM_n0(nn.Module).k, read by          n0 = MSUB_n0.get()
                                     SubM_n0.get(): super().k
        number_module_super_method   BaseF_n0(nn.Module).scale(), replaced   n0 = FSUB_n0.get()
                                     at each call, read by SubF_n0.get():
                                     super().scale()
        number_super_property        BaseP_n0.k, a property of ``_k``, read  n0 = PSUB_n0.get()
                                     by SubP_n0.get(): super().k

    (the last two: super_reads.py, Note [a number a module reads through super()], and super_properties.py, Note [a
    property read through super()], session 41's neighbours). The first three classes also hold an entry that
    compares otherwise (``__annotations__``, a dict; a tensor in the module's), which left a class's dict unrecorded
    (object_shapes.py, Note [a class's dict read whole], session 41).

    hidden_numbers.py ends such a program's calls with the first variant's aliasing and another number, so a stale
    number shows.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import redrawn

P_COPIED_READ = 0.3
PARENTS = ("number_default", "number_helper")
_CLASS = "class Cfg_{h}:\n    k: float = 0.0\n    table = {{'a': [1]}}\n"
_MODULE_SUPER = ("class BaseM_{h}(torch.nn.Module):\n    k: float = 0.0\n    const = torch.zeros(1)\n\n\n"
                 "class SubM_{h}(BaseM_{h}):\n    k = -1.0\n\n"
                 "    def get(self):\n        return super().k\n\n\nMSUB_{h} = SubM_{h}()\n")
_MODULE_SUPER_METHOD = ("class BaseF_{h}(torch.nn.Module):\n    def scale(self):\n        return 0.0\n\n\n"
                        "class SubF_{h}(BaseF_{h}):\n    def scale(self):\n        return -1.0\n\n"
                        "    def get(self):\n        return super().scale()\n\n\nFSUB_{h} = SubF_{h}()\n")
_SUPER_PROPERTY = ("class BaseP_{h}:\n    _k = 0.0\n\n    @property\n    def k(self):\n        return self._k\n\n\n"
                   "class SubP_{h}(BaseP_{h}):\n    @property\n    def k(self):\n        return -1.0\n\n"
                   "    def get(self):\n        return super().k\n\n\nPSUB_{h} = SubP_{h}()\n")
# kind -> (holder lines, the line installing this call's number, how the program reads it, no argument)
KINDS = {
    "number_class_dict_copy": (_CLASS, "    Cfg_{h}.k = hidden[{h!r}]", "dict(vars(Cfg_{h}))['k']", None),
    "number_unpacked_class_dict": (_CLASS, "    Cfg_{h}.k = hidden[{h!r}]", "{{**vars(Cfg_{h})}}['k']", None),
    "number_module_super": (_MODULE_SUPER, "    BaseM_{h}.k = hidden[{h!r}]", "MSUB_{h}.get()", None),
    "number_module_super_method": (_MODULE_SUPER_METHOD,
                                   "    BaseF_{h}.scale = (lambda v: lambda self: v)(hidden[{h!r}])", "FSUB_{h}.get()",
                                   None),
    "number_super_property": (_SUPER_PROPERTY, "    BaseP_{h}._k = hidden[{h!r}]", "PSUB_{h}.get()", None),
}


def redraw(rng: random.Random, kind: str) -> str:
    """``kind``, or one of ``KINDS`` in its place where ``kind`` is among ``PARENTS`` (module Note)."""
    return redrawn(rng, kind, "numbers:copied read", PARENTS, P_COPIED_READ, KINDS)
