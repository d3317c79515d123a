"""The ``modules`` generator's process settings (``gen_modules.py``, ``modules_outside.py``): environment variables and
``torch.are_deterministic_algorithms_enabled()`` that ``Net``'s forward branches on, changed between calls.

Note [a process setting the forward branches on, changed between calls]
    Session 33 (fusion_alias/process_state.py, Note [a process setting read inside the function]): Thunder 0.2.6
    asks the process once, while tracing, and its prologue never asks again. Some programs' ``Net`` forward reads

        ``os.environ.get("FUSION_ALIAS_FUZZ_FLAG", "0") == "1"``, ``"FUSION_ALIAS_FUZZ_FLAG" in os.environ``,
        ``int(os.getenv("FUSION_ALIAS_FUZZ_SCALE", "1"))`` (a number operand) and
        ``torch.are_deterministic_algorithms_enabled()`` (a branch, or an in-place write under it),

    and the statements before a later call change them (``os.environ["FUSION_ALIAS_FUZZ_FLAG"] = "1"`` / ``"0"``,
    ``os.environ.pop(..)``, ``os.environ["FUSION_ALIAS_FUZZ_SCALE"] = "3"``, ``torch.use_deterministic_algorithms``).
    Each statement sets a value (runs the same on the eager and the jitted side: both see one process).

    The process is shared by every program, so each run starts from the defaults (``isolated``: neither variable
    set, deterministic algorithms off) and gives the process back as it found it: ``oracle.run_program`` runs each
    ``check`` so, and the driver draws each program so (the generator's eager runs). A program holding the form
    also resets them when it is loaded (``PRELUDE``: its repro, run alone, starts from the same state).

    Drawn from a generator of its own, seeded from ``rng``'s state without drawing from it (``draw``): with
    ``P_PROC`` 0 every program is the one it was.
"""

from __future__ import annotations

import contextlib
import os
import random

import torch

from fusion_alias.fuzz.own_stream_forms import OwnStreamForm
from fusion_alias.fuzz.program import Stmt

P_PROC = 0.08  # the form's probability in a program (tests set it to 0: the streams before it)
P_STMT = 0.4  # a forward statement of the form, where a program holds it
VARS = ("FUSION_ALIAS_FUZZ_FLAG", "FUSION_ALIAS_FUZZ_SCALE")
PRELUDE = ["import os", "", "os.environ.pop(\"FUSION_ALIAS_FUZZ_FLAG\", None)  # (the defaults: modules_process.py)",
           "os.environ.pop(\"FUSION_ALIAS_FUZZ_SCALE\", None)", "torch.use_deterministic_algorithms(False)", "", ""]
_FLAG = 'os.environ.get("FUSION_ALIAS_FUZZ_FLAG", "0") == "1"'
_SET = '"FUSION_ALIAS_FUZZ_FLAG" in os.environ'
_SCALE = 'int(os.getenv("FUSION_ALIAS_FUZZ_SCALE", "1"))'
_DET = "torch.are_deterministic_algorithms_enabled()"
_REBINDS = ('os.environ["FUSION_ALIAS_FUZZ_FLAG"] = "1"', 'os.environ["FUSION_ALIAS_FUZZ_FLAG"] = "0"',
            'os.environ.pop("FUSION_ALIAS_FUZZ_FLAG", None)', 'os.environ["FUSION_ALIAS_FUZZ_SCALE"] = "3"',
            "torch.use_deterministic_algorithms(True)", "torch.use_deterministic_algorithms(False)",
            'os.environ["FUSION_ALIAS_FUZZ_FLAG"] = "1"', "torch.use_deterministic_algorithms(True)",
            "torch.use_deterministic_algorithms(True)")  # (mostly away from the defaults, the run's start)


class Proc(OwnStreamForm):
    """One program's process-setting form, and the generator it draws from."""

    def wants(self) -> bool:
        return self.s.random() < P_STMT

    def statement(self, body) -> tuple[Stmt, str | None]:
        """A forward statement reading a process setting (``body`` is the program's ``gen_modules._Body``)."""
        s = self.s
        x, v = self.operands(body)
        if s.random() < 0.2:
            cond = s.choice((_FLAG, _DET, _SET, _DET))
            return Stmt(f"if {cond}: m.u.mul_({s.choice((0.5, 2.0, -1.0))})", writes="m"), None
        t = body.tmp()
        expr = s.choice([f"{x} * 2.0 if {_FLAG} else {x} - {v}", f"{x} * {_SCALE}", f"{x} + {v} * {_SCALE}",
                         f"{x} + {v} if {_SET} else {x} * 0.5", f"{x}.tanh() if {_DET} else {x} + 1.0",
                         f"{x} @ m.w.t() if {_DET} else {x} * {_SCALE}", f"{x} * ({v} if {_DET} else {v}.tanh())"])
        return Stmt(f"{t} = {expr}", target=t), t

    def rebinds(self) -> tuple[str, ...]:
        """One or two statements changing a process setting before a later call (the first call of a variant
        compiles again where its aliasing is new: the calls that run a cached program are the ones that tell)."""
        s = self.s
        return tuple(s.choice(_REBINDS) for _ in range(s.choice((1, 1, 2))))


def draw(rng: random.Random) -> Proc | None:
    """The process-setting form of one program (None: the program holds none), from a generator seeded from
    ``rng``'s state without drawing from it."""
    s = random.Random(str(rng.getstate()[1][:16]) + ":process")
    return Proc(s) if P_PROC > 0 and s.random() < P_PROC else None


@contextlib.contextmanager
def isolated():
    """Run from the defaults (neither variable of ``VARS`` set, deterministic algorithms off) and give the process
    back as it was (Note [a process setting the forward branches on, changed between calls])."""
    saved = {k: os.environ.get(k) for k in VARS}
    det, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    for k in VARS:
        os.environ.pop(k, None)
    torch.use_deterministic_algorithms(False)
    try:
        yield
    finally:
        for k, value in saved.items():
            if value is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = value
        torch.use_deterministic_algorithms(det, warn_only=warn)
