"""The hidden generator's number in a default dict of a function given as an argument, changed in place between
calls.

Note [a function argument's default container, in the fuzzer]
    Session 37 (guard.py, Note [a function or a dtype given as an argument], its last paragraph): the guard keyed a
    function argument by identity alone, so ``f(x, read)`` ran the first call's number of ``read``'s default dict
    after it changed in place (plain ``thunder.jit`` too; found by a hand probe beside hidden_methods.py's forms).
    A program of one of hidden_methods.py's kinds becomes, with probability ``P_FUNCTION_ARG`` drawn from a stream
    of its own (with it 0, every program is the one it was), one whose last parameter ``reader`` is the function::

        number_function_arg    def read_n0(opts=HELPER_DEFAULTS): return opts['n0']    n0 = reader()
                               (``reader = read_n0`` at every call; the number replaced in HELPER_DEFAULTS)
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import own_stream

P_FUNCTION_ARG = 0.3
PARAM = "reader"
KIND = "number_function_arg"
# kind -> (holder lines, the line installing this call's number, how the program reads it, the argument)
KINDS = {
    KIND: ("HELPER_DEFAULTS = {{}}\n\n\ndef read_{h}(opts=HELPER_DEFAULTS):\n    return opts[{h!r}]\n",
           "    HELPER_DEFAULTS[{h!r}] = hidden[{h!r}]", f"{PARAM}()", "read_{h}"),
}


def redraw(rng: random.Random, kind: str, parents) -> str:
    """``kind``, or ``KIND`` in its place where ``kind`` is among ``parents`` (module Note)."""
    s = own_stream(rng, "numbers:function argument")
    if kind in parents and P_FUNCTION_ARG > 0 and s.random() < P_FUNCTION_ARG:
        return KIND
    return kind
