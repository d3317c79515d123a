"""The hidden generator's number in a default dict of a method, a static or class method, or a module's
``forward``, changed in place between calls.

Note [a method's default container, in the fuzzer]
    Session 36 (default_contents.py, Note [a default container of a function the program calls]; module_tables.py
    for a called module's ``forward``) fixed a number read from a container default of any function the program
    calls (the first call's number, silently, before), but the generator's ``number_helper`` calls a module-level
    function only. A ``number_helper`` program becomes, with probability ``P_METHOD`` drawn from a stream of its
    own (with it 0, every program is the one it was), one reading ``HELPER_DEFAULTS`` (the number replaced in it
    before each call) through::

        number_method        class Reader_n0: def read(self, opts=HELPER_DEFAULTS)     n0 = READER_n0.read()
        number_staticmethod  @staticmethod def read(opts=HELPER_DEFAULTS)              n0 = Reader_n0.read()
        number_classmethod   @classmethod def read(cls, opts=HELPER_DEFAULTS)          n0 = Reader_n0.read()
        number_forward       class Reader_n0(torch.nn.Module): def forward(self, opts=HELPER_DEFAULTS)
                             READER_n0 = Reader_n0()                                   n0 = READER_n0()
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import own_stream

P_METHOD = 0.4
# kind -> (the class's base, the read method's decorator, name and first parameter, how the program reads the number)
KINDS = {
    "number_method": ("", "", "read", "self, ", "READER_{h}.read()"),
    "number_staticmethod": ("", "    @staticmethod\n", "read", "", "Reader_{h}.read()"),
    "number_classmethod": ("", "    @classmethod\n", "read", "cls, ", "Reader_{h}.read()"),
    "number_forward": ("(torch.nn.Module)", "", "forward", "self, ", "READER_{h}()"),
}
INSTALL = "    HELPER_DEFAULTS[{h!r}] = hidden[{h!r}]"


def holder(h: str, kind: str) -> str:
    """The module-level lines of ``kind``'s holder: the defaults dict and the class whose method reads it."""
    base, deco, name, first, _ = KINDS[kind]
    lines = ["HELPER_DEFAULTS = {}", "", "", f"class Reader_{h}{base}:",
             f"{deco}    def {name}({first}opts=HELPER_DEFAULTS):", f"        return opts[{h!r}]", ""]
    if first == "self, ":
        lines += ["", f"READER_{h} = Reader_{h}()", ""]
    return "\n".join(lines)


def redraw(rng: random.Random, kind: str, parents) -> str:
    """``kind``, or one of ``KINDS`` in its place where ``kind`` is among ``parents`` (module Note)."""
    s = own_stream(rng, "numbers:methods")
    if kind in parents and P_METHOD > 0 and s.random() < P_METHOD:
        return s.choice(tuple(KINDS))
    return kind
