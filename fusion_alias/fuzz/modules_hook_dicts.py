"""The ``modules`` generator's hook dicts replaced on the module between calls (``gen_modules.py``,
``modules_outside.py``).

Note [hook dicts replaced between calls, generated]
    Session 35 (fusion_alias/module_tables.py, Note [a hook dict replaced on the module]): ``m._forward_hooks =
    OrderedDict()`` removes every hook of a module at once, ``m._forward_pre_hooks = OrderedDict({k: hook})`` sets
    one; Thunder 0.2.6 checks neither, and fusion_alias held the old dicts. Some programs define, before ``Net``, a
    forward hook that scales the module's tensor outputs and a pre-hook that negates its first argument, and the
    statements before a later call set or clear the module's hook dicts (each statement sets the same contents
    when run again; each side runs them on its own module). The form adds no forward statement: the module called
    runs the hooks (a program whose jitted callable is not the module does not call them).

    Drawn from a generator of its own, seeded from ``rng``'s state without drawing from it (``draw``): with
    ``P_HOOK_DICTS`` 0 every program is the one it was.
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import OwnStreamForm, drawn

P_HOOK_DICTS = 0.08  # the form's probability in a program (tests set it to 0: the streams before session 35)
PRELUDE = ["import collections", "", "",
           "def _fa_times3(mod, args, out):",
           "    return tuple(o * 3 for o in out) if isinstance(out, tuple) else out * 3", "", "",
           "def _fa_neg_first(mod, args):",
           "    return (-args[0],) + tuple(args[1:])", "", ""]
_REBINDS = ("m._forward_hooks = collections.OrderedDict({9001: _fa_times3})",
            "m._forward_hooks = collections.OrderedDict()",
            "m._forward_pre_hooks = collections.OrderedDict({9002: _fa_neg_first})",
            "m._forward_pre_hooks = collections.OrderedDict()")


class HookDicts(OwnStreamForm):
    """One program's hook-dict form, and the generator it draws from (no forward statement of its own)."""

    REBINDS, PRELUDE = _REBINDS, PRELUDE  # (the module's constants, as ``OwnStreamForm`` reads them)


def draw(rng: random.Random) -> HookDicts | None:
    """The hook-dict form of one program (None: the program holds none), from a generator seeded from ``rng``'s
    state without drawing from it."""
    return drawn(HookDicts, rng, "hook dicts", P_HOOK_DICTS)
