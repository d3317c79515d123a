"""The hidden generator's number inside a ``collections.deque`` given as an argument, another on each call.

Note [numbers inside a deque argument, in the fuzzer]
    Session 36 (guard.py, Note [numbers inside a deque argument]): Thunder's ``tree_flatten`` unpacks a deque
    argument like a list but its prologue checks none of the numbers inside, so ``f(x, deque([2.0]))`` then
    ``f(x, deque([3.0]))`` ran the first number again, silently, before the guard keyed them; no generator gave a
    deque as an argument (``number_deque`` reads a global one). A ``number_array`` program (one that
    hidden_views.py left as it was) becomes, with probability ``P_DEQUE_ARG`` drawn from a stream of its own (with
    it 0, every program is the one it was), one whose last parameter ``q`` is a deque holding the number::

        number_deque_arg        q = collections.deque([1.0, n0], maxlen=2)     (a new deque at each call)
        number_deque_arg_kept   q = DQ_n0 (one deque, its last number replaced in place between calls)
                                n0 = float(q[-1])
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import own_stream

P_DEQUE_ARG = 0.25
PARAM = "q"
# kind -> (holder lines, the line installing this call's number, how the program reads it, the argument)
KINDS = {
    "number_deque_arg": ("import collections", "    pass", f"float({PARAM}[-1])",
                         "collections.deque([1.0, {h}], maxlen=2)"),
    "number_deque_arg_kept": ("import collections\nDQ_{h} = collections.deque([1.0, 0.0], maxlen=2)",
                              "    DQ_{h}[-1] = hidden[{h!r}]", f"float({PARAM}[-1])", "DQ_{h}"),
}


def redraw(rng: random.Random, kind: str, parents) -> str:
    """``kind``, or one of ``KINDS`` in its place where ``kind`` is among ``parents`` (module Note)."""
    s = own_stream(rng, "numbers:deque argument")
    if kind in parents and P_DEQUE_ARG > 0 and s.random() < P_DEQUE_ARG:
        return s.choice(tuple(KINDS))
    return kind
