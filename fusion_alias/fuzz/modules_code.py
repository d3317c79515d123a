"""The ``modules`` generator's code replaced between calls (``gen_modules.py``, ``modules_outside.py``): a helper
function whose code or defaults are replaced, a method replaced on a plain class and ``forward`` replaced on a
submodule's class.

Note [code replaced between calls]
    Session 34 (fusion_alias/object_shapes.py, Note [a function's code and defaults]; outside_reads.py, Note [the
    methods and the function called]): Thunder 0.2.6 runs the code it finds while tracing, and its prologue checks
    neither a function's ``__code__`` and defaults nor which function a method binds. Some programs define, before
    ``Net``,

        ``def _fa_gain(x, k=2.0)``         the forward calls ``_fa_gain(x)``, ``_fa_gain(x, v)``;
        ``class _FaAct`` with ``go``        ``self.fa = _FaAct()``; the forward calls ``m.fa.go(x)``;
        ``class _FaMod(nn.Module)``         ``self.fam = _FaMod()``; the forward calls ``m.fam(x)``,

    and the statements before a later call replace them: ``_fa_gain.__defaults__ = (-0.5,)``,
    ``_fa_gain.__code__ = _fa_other.__code__``, ``_FaAct.go = _fa_go_alt``, ``_FaMod.forward = _fa_forward_alt``
    (each spelled so that running it again changes nothing more: the variants' statements accumulate). Every
    replacement computes another value, and ``_fa_go_alt`` writes its operand's clone in place.

    Drawn from a generator of its own, seeded from ``rng``'s state without drawing from it (``draw``): with
    ``P_CODE`` 0 every program is the one it was.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import OwnStreamForm, drawn
from fusion_alias.fuzz.program import Stmt

P_CODE = 0.08  # the form's probability in a program (tests set it to 0: the streams before session 34)
P_STMT = 0.35  # a forward statement of the form, where a program holds it
PRELUDE = ["def _fa_gain(x, k=2.0):", "    return x * k", "", "",
           "def _fa_other(x, k=2.0):", "    return x - k * 0.25", "", "",
           "class _FaAct:", "    def go(self, x):", "        return torch.tanh(x)", "", "",
           "def _fa_go_alt(self, x):", "    return x.clone().mul_(-1.5)", "", "",
           "class _FaMod(torch.nn.Module):", "    def forward(self, x):", "        return x * 0.5 + 1.0", "", "",
           "def _fa_forward_alt(self, x):", "    return torch.sigmoid(x) - 0.25", "", ""]
INIT = ("self.fa = _FaAct()", "self.fam = _FaMod()")
_REBINDS = ("_fa_gain.__defaults__ = (-0.5,)", "_fa_gain.__code__ = _fa_other.__code__", "_FaAct.go = _fa_go_alt",
            "_FaMod.forward = _fa_forward_alt", "_fa_gain.__defaults__ = (3.0,)")


class Code(OwnStreamForm):
    """One program's code-replacement form, and the generator it draws from."""

    P_STMT, REBINDS, PRELUDE, INIT = P_STMT, _REBINDS, PRELUDE, INIT  # (the module's constants, as
    # ``OwnStreamForm`` reads them)

    def statement(self, body) -> tuple[Stmt, str | None]:
        """A forward statement calling the helper, the method or the submodule (``body``: ``gen_modules._Body``)."""
        x, v = self.operands(body)
        return self.assigned(body, [f"_fa_gain({x})", f"_fa_gain({x}, {v})", f"{x} + _fa_gain({v})", f"m.fa.go({x})",
                                    f"m.fa.go({x} @ m.w.t()) + {v}", f"m.fam({x})", f"{x} * m.fam({v})"])


def draw(rng: random.Random) -> Code | None:
    """The code form of one program (None: the program holds none), from a generator seeded from ``rng``'s state
    without drawing from it."""
    return drawn(Code, rng, "code", P_CODE)
