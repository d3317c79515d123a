"""The ``modules`` generator's submodule and its hooks (``gen_modules.py``, ``modules_outside.py``): a parameterless
submodule the forward calls, swapped between calls, with hooks registered on it and cleared between calls.

Note [a submodule and its hooks, changed between calls]
    Session 33 (fusion_alias/module_tables.py): Thunder 0.2.6 traces the hooks ``Module.__call__`` finds and the
    submodule a parent holds, and its prologue checks neither again. Some programs' ``Net`` holds

        sub     ``self.sub = torch.nn.ReLU()``; the forward reads ``m.sub(x)``, ``m.sub(x @ m.w.t()) + v``,
                ``x + m.sub(v)``; between calls ``m.sub`` is rebound (``torch.nn.Tanh()``,
                ``torch.nn.LeakyReLU(0.25)``, ``torch.nn.Sequential(torch.nn.Tanh(), torch.nn.ReLU())``,
                ``torch.nn.ReLU()``), a hook is registered on it (``register_forward_pre_hook(_fa_pre)`` that
                scales the input, ``register_forward_hook(_fa_post)`` that shifts the output,
                ``register_forward_pre_hook(_fa_pre_in_place)`` that halves the input in place: the
                caller's tensor, an argument or the module's state), or its hooks are cleared
                (``m.sub._forward_hooks.clear()``).

    The hook functions are defined in the program, before ``Net``. Drawn from a generator of its own, seeded from
    ``rng``'s state without drawing from it (``draw``): with ``P_SUB`` 0 every program is the one it was.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import OwnStreamForm, drawn
from fusion_alias.fuzz.program import Stmt

P_SUB = 0.1  # the form's probability in a program (tests set it to 0: the streams before session 33)
P_STMT = 0.3  # a forward statement of the form, where a program holds it
PRELUDE = ["def _fa_pre(mod, args):", "    return (args[0] * 2.0,)", "", "",
           "def _fa_post(mod, args, out):", "    return out + 1.0", "", "",
           "def _fa_pre_in_place(mod, args):", "    args[0].mul_(0.5)", "", ""]
INIT = "self.sub = torch.nn.ReLU()"
_REBINDS = ("m.sub = torch.nn.Tanh()", "m.sub = torch.nn.LeakyReLU(0.25)", "m.sub = torch.nn.ReLU()",
            "m.sub = torch.nn.Sequential(torch.nn.Tanh(), torch.nn.ReLU())",
            "m.sub.register_forward_pre_hook(_fa_pre)", "m.sub.register_forward_hook(_fa_post)",
            "m.sub.register_forward_pre_hook(_fa_pre_in_place)", "m.sub.register_forward_hook(_fa_post)",
            "m.sub._forward_hooks.clear()", "m.sub._forward_pre_hooks.clear()")


class Sub(OwnStreamForm):
    """One program's submodule form, and the generator it draws from."""

    P_STMT, REBINDS, PRELUDE, INIT = P_STMT, _REBINDS, PRELUDE, (INIT,)  # (the module's constants, as
    # ``OwnStreamForm`` reads them)

    def statement(self, body) -> tuple[Stmt, str | None]:
        """A forward statement calling the submodule (``body`` is the program's ``gen_modules._Body``)."""
        x, v = self.operands(body)
        return self.assigned(body, [f"m.sub({x})", f"m.sub({x} @ m.w.t()) + {v}", f"{x} + m.sub({v})",
                                    f"m.sub({x}) * 2.0"])


def draw(rng: random.Random) -> Sub | None:
    """The submodule form of one program (None: the program holds none), from a generator seeded from ``rng``'s
    state without drawing from it."""
    return drawn(Sub, rng, "sub", P_SUB)
