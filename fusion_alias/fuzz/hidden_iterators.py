"""The hidden generator's number drawn from an iterator kept in an object's attribute, given as an argument, or held
in the function's closure: programs fusion_alias must refuse.

Note [an iterator that outlives the call, in the fuzzer]
    Session 36 (outside_reads.py, Note [an iterator that outlives the call]): Thunder advances an iterator from
    outside once, while tracing, and every later call reused the first call's value, silently; fusion_alias now
    refuses it by name. The generator's ``number_iterator`` keeps the iterator in a global dict only. A
    ``number_iterator`` program becomes, with probability ``P_HOLDER`` drawn from a stream of its own (with it 0,
    every program is the one it was), one whose iterator (a new one over this call's number before each call) is::

        number_iterator_attr     ITBOX_n0 = IterBox(); ITBOX_n0.it = iter([...])      n0 = next(ITBOX_n0.it)
        number_iterator_arg      the last parameter ``it`` = iter([n0])                n0 = next(it)
        number_iterator_closure  a cell of _make_prog() (source.py)                    n0 = next(closure_n0)

    Each carries ``REFUSAL`` (``Stmt.must_refuse``): a jitted call that returns is a missed rejection.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import own_stream

P_HOLDER = 0.2  # (refused programs: a few are enough; tests/test_session36_outside_iterators.py counts ITERATOR)
PARAM = "it"
CLOSURE = "number_iterator_closure"
REFUSAL = "reads an iterator that outlives the call (kept in an attribute, an argument or a closure)"
# kind -> (holder lines, the line installing this call's iterator, how the program reads it, the argument or None)
KINDS = {
    "number_iterator_attr": ("class IterBox:\n    it = None\n\n\nITBOX_{h} = IterBox()",
                             "    ITBOX_{h}.it = iter([hidden[{h!r}]])", "next(ITBOX_{h}.it)", None),
    "number_iterator_arg": ("", "    pass", f"next({PARAM})", "iter([{h}])"),
    CLOSURE: ("", "    SET_CLOSURE[{h!r}](iter([hidden[{h!r}]]))", "next(closure_{h})", None),
}


def redraw(rng: random.Random, kind: str, parents) -> str:
    """``kind``, or one of ``KINDS`` in its place where ``kind`` is among ``parents`` (module Note)."""
    s = own_stream(rng, "numbers:iterator holders")
    if kind in parents and P_HOLDER > 0 and s.random() < P_HOLDER:
        return s.choice(tuple(KINDS))
    return kind
