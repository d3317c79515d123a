"""The hidden generator's numbers in a ``bytearray``, a writable ``memoryview`` or a dict's live view, changed in
place between calls.

Note [a number in a buffer or a dict view, in the fuzzer]
    Session 36 (default_contents.py, Note [a mutable sequence Thunder does not unpack]) fixed these holders, which
    Thunder's prologue neither checks nor unpacks (the first call's number, silently, before), but no generator
    made them: ``number_array`` draws a numpy array, an ``array.array``, a ``deque`` or a ``mappingproxy``. A
    ``number_array`` program becomes, with probability ``P_VIEW`` drawn from a stream of its own (with it 0, every
    program is the one it was), one of::

        number_bytearray    ARR_n0 = bytearray(1)                   n0 = (ARR_n0[0] - 128) / 4
        number_memoryview   ARR_BUF_n0 = array.array('d', [0.0])    n0 = float(ARR_n0[0])
                            ARR_n0 = memoryview(ARR_BUF_n0)         (this call's number written into the buffer)
        number_dict_keys    ARR_DICT_n0 = {0.0: None}               n0 = float(list(ARR_n0)[0])
                            ARR_n0 = ARR_DICT_n0.keys()             (the dict's one key replaced)
        number_dict_values  ARR_n0 = ARR_DICT_n0.values()           n0 = float(list(ARR_n0)[0])
        number_dict_items   ARR_n0 = ARR_DICT_n0.items()            n0 = float(list(ARR_n0)[0][1])

    the view kept apart from what it shows (``ARR_n0``, not ``ARR_DICT_n0``, is what the program reads). A
    ``bytearray`` holds the number as ``128 + 4 * n0`` (every number the generator draws is a multiple of 1/4).
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import own_stream

P_VIEW = 0.3
_DICT = "ARR_DICT_{h} = {{0: 0.0}}\nARR_{h} = ARR_DICT_{h}.{view}()"
# kind -> (holder lines, the line installing this call's number, how the program reads it, no argument)
KINDS = {
    "number_bytearray": ("ARR_{h} = bytearray(1)", "    ARR_{h}[0] = int(128 + 4 * hidden[{h!r}])",
                         "(ARR_{h}[0] - 128) / 4", None),
    "number_memoryview": ("import array\nARR_BUF_{h} = array.array('d', [0.0])\nARR_{h} = memoryview(ARR_BUF_{h})",
                          "    ARR_BUF_{h}[0] = hidden[{h!r}]", "float(ARR_{h}[0])", None),
    "number_dict_keys": ("ARR_DICT_{h} = {{0.0: None}}\nARR_{h} = ARR_DICT_{h}.keys()",
                         "    ARR_DICT_{h}.clear()\n    ARR_DICT_{h}[hidden[{h!r}]] = None", "float(list(ARR_{h})[0])",
                         None),
    "number_dict_values": (_DICT.replace("{view}", "values"), "    ARR_DICT_{h}[0] = hidden[{h!r}]",
                           "float(list(ARR_{h})[0])", None),
    "number_dict_items": (_DICT.replace("{view}", "items"), "    ARR_DICT_{h}[0] = hidden[{h!r}]",
                          "float(list(ARR_{h})[0][1])", None),
}


def redraw(rng: random.Random, kind: str, parents) -> str:
    """``kind``, or one of ``KINDS`` in its place where ``kind`` is among ``parents`` (module Note)."""
    s = own_stream(rng, "numbers:views")
    if kind in parents and P_VIEW > 0 and s.random() < P_VIEW:
        return s.choice(tuple(KINDS))
    return kind
