"""The hidden generator's number in a default dict of a function given as an argument or held in another
function's default, changed in place between calls.

Note [a function argument's default container, in the fuzzer]
    Session 37 (guard.py, Note [a function or a dtype given as an argument], its last paragraph): the guard keyed a
    function argument by identity alone, so ``f(x, read)`` ran the first call's number of ``read``'s default dict
    after it changed in place (plain ``thunder.jit`` too; found by a hand probe beside hidden_methods.py's forms).
    A program of one of hidden_methods.py's kinds becomes, with probability ``P_FUNCTION_ARG`` drawn from a stream
    of its own (with it 0, every program is the one it was), one whose last parameter ``reader`` is the function,
    or (default_contents.py, Note [a function held in a default], the same session) one calling a helper whose
    default is that function::

        number_function_arg        def read_n0(opts=HELPER_DEFAULTS): return opts['n0']     n0 = reader()
                                   (``reader = read_n0`` at every call; the number replaced in HELPER_DEFAULTS)
        number_default_function    def call_n0(f=read_n0): return f()                        n0 = call_n0()

    and (Note [a class or an object held in a default]) a helper whose default is a class or a callable object
    holding the number (``number_default_class``: ``def call_n0(C=Cfg_n0): return C.k``, ``Cfg_n0.k`` replaced;
    ``number_default_object``: ``def call_n0(f=Scale_n0()): return f()``, its ``k`` replaced).
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import own_stream

P_FUNCTION_ARG = 0.3
PARAM = "reader"
KIND = "number_function_arg"
_READ = "HELPER_DEFAULTS = {{}}\n\n\ndef read_{h}(opts=HELPER_DEFAULTS):\n    return opts[{h!r}]\n"
_INSTALL = "    HELPER_DEFAULTS[{h!r}] = hidden[{h!r}]"
# kind -> (holder lines, the line installing this call's number, how the program reads it, the argument or None)
KINDS = {
    KIND: (_READ, _INSTALL, f"{PARAM}()", "read_{h}"),
    "number_default_function": (_READ + "\n\ndef call_{h}(f=read_{h}):\n    return f()\n", _INSTALL, "call_{h}()",
                                None),
    "number_default_class": ("class Cfg_{h}:\n    k = 0.0\n\n\ndef call_{h}(C=Cfg_{h}):\n    return C.k\n",
                             "    Cfg_{h}.k = hidden[{h!r}]", "call_{h}()", None),
    "number_default_object": ("class Scale_{h}:\n    def __init__(self):\n        self.k = 0.0\n\n"
                              "    def __call__(self):\n        return self.k\n\n\n"
                              "def call_{h}(f=Scale_{h}()):\n    return f()\n",
                              "    call_{h}.__defaults__[0].k = hidden[{h!r}]", "call_{h}()", None),
}


def redraw(rng: random.Random, kind: str, parents) -> str:
    """``kind``, or one of ``KINDS`` in its place where ``kind`` is among ``parents`` (module Note)."""
    s = own_stream(rng, "numbers:function argument")
    if kind in parents and P_FUNCTION_ARG > 0 and s.random() < P_FUNCTION_ARG:
        return s.choice(tuple(KINDS))
    return kind
