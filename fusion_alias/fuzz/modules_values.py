"""The ``modules`` generator's values of types Thunder's prologue does not check, read from a global and the module
and changed between calls (``gen_modules.py``, ``modules_outside.py``).

Note [values Thunder's prologue does not check, generated]
    Session 35 (fusion_alias/object_shapes.py, Note [a value Thunder's prologue does not check]): Thunder 0.2.6's
    prologue checks the numbers and strings a program reads from outside its arguments, not a ``range``, ``bytes``,
    a ``frozenset``, a ``set`` or a ``torch.layout``; the program traced with the first value ran for every later
    one. Some programs define, before ``Net``, a plain object ``_FA_V`` holding such values and a global set
    ``_FA_SEEN``, give the module a ``range`` attribute (``self.fa_span``), branch or scale on them in the forward
    (``x * float(len(_FA_V.span))``, ``x + v if 1 in _FA_SEEN else x * 0.5``), and change them before a later call
    (``_FA_V.span = range(4)``, ``_FA_SEEN.discard(1)``, ``m.fa_span = range(5)``; each statement changes nothing
    more when run again, as the variants' statements accumulate and each side runs them).

    Drawn from a generator of its own, seeded from ``rng``'s state without drawing from it (``draw``): with
    ``P_VALUES`` 0 every program is the one it was.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import OwnStreamForm, drawn
from fusion_alias.fuzz.program import Stmt

P_VALUES = 0.08  # the form's probability in a program (tests set it to 0: the streams before session 35)
P_STMT = 0.35  # a forward statement of the form, where a program holds it
PRELUDE = ["class _FaValues:", "    pass", "", "",
           "_FA_V = _FaValues()", "_FA_V.span = range(2)", "_FA_V.tag = b'a'", "_FA_V.kinds = frozenset({'a'})",
           "_FA_V.layout = torch.strided", "_FA_SEEN = {1}", "", ""]
INIT = ("self.fa_span = range(3)",)
_REBINDS = ("_FA_V.span = range(4)", "_FA_V.span = range(1)", "_FA_V.tag = b'b'", "_FA_V.kinds = frozenset({'a', 'b'})",
            "_FA_V.layout = torch.sparse_coo", "_FA_SEEN.discard(1)", "_FA_SEEN.add(1)", "m.fa_span = range(5)")


class Values(OwnStreamForm):
    """One program's form of values Thunder's prologue does not check, and the generator it draws from."""

    P_STMT, REBINDS, PRELUDE, INIT = P_STMT, _REBINDS, PRELUDE, INIT  # (the module's constants, as
    # ``OwnStreamForm`` reads them)

    def statement(self, body) -> tuple[Stmt, str | None]:
        """A forward statement reading one of the values (``body``: ``gen_modules._Body``)."""
        x, v = self.operands(body)
        return self.assigned(body, [f"{x} * float(len(_FA_V.span))", f"{x} * 2.0 if _FA_V.tag == b'a' else {x} - {v}",
                                    f"{x} + {v} if 1 in _FA_SEEN else {x} * 0.5",
                                    f"{x} * -1.0 if 'b' in _FA_V.kinds else {x} + 1.0",
                                    f"{x} * 3.0 if _FA_V.layout == torch.strided else {x}.tanh()",
                                    f"{x} * float(m.fa_span[-1])"])


def draw(rng: random.Random) -> Values | None:
    """The values form of one program (None: the program holds none), from a generator seeded from ``rng``'s state
    without drawing from it."""
    return drawn(Values, rng, "values", P_VALUES)
