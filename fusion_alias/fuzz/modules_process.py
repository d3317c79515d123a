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

Note [a backend flag in the deterministic-mode places]
    Session 34 (fusion_alias/process_state.py, Note [backend flags read through torch._C]): a ``torch.backends``
    flag torch answers through a ``torch._C`` getter kept its first answer. In some programs holding the form
    (``P_BACKEND``) one flag of :data:`BACKEND_FLAGS` takes the place of deterministic mode: its read stands where
    ``torch.are_deterministic_algorithms_enabled()`` would, and its setter where ``torch.use_deterministic_
    algorithms`` would (``torch.backends.cuda.matmul.allow_tf32 = True``). The flag is drawn from a stream of its
    own (``":backend"``), after the form's, so with ``P_BACKEND`` 0 every program is the one it was (session 33's
    process tests set it so). The flags are ones CPU programs compute the same under (cuda, cudnn), also the
    neighbouring ``torch.backends.cudnn.deterministic`` (a module property, right before session 34), and each
    run starts from their defaults (``isolated``; ``prelude``).
"""

from __future__ import annotations

import contextlib
import os
import random

import torch

from fusion_alias.fuzz.own_stream_forms import OwnStreamForm, own_stream
from fusion_alias.fuzz.program import Stmt

P_PROC = 0.08  # the form's probability in a program (tests set it to 0: the streams before it)
P_BACKEND = 0.5  # a program of the form reading a backend flag (Note [a backend flag in the deterministic-mode places])
# name -> (its read, its setter with {} for the value, its default, the other value)
BACKEND_FLAGS = {
    "allow_tf32": ("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cuda.matmul.allow_tf32 = {}", False, True),
    "flash_sdp": ("torch.backends.cuda.flash_sdp_enabled()", "torch.backends.cuda.enable_flash_sdp({})", True, False),
    "conv_tf32": ('torch.backends.cudnn.conv.fp32_precision == "tf32"', "torch.backends.cudnn.conv.fp32_precision = {}",
                  "none", "tf32"),
    "cudnn_det": ("torch.backends.cudnn.deterministic", "torch.backends.cudnn.deterministic = {}", False, True),
}
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
    """One program's process-setting form, and the generator it draws from; ``backend``: the flag of
    :data:`BACKEND_FLAGS` in deterministic mode's places, or None."""

    P_STMT = P_STMT  # (the module's constant, as ``OwnStreamForm.wants`` reads it)

    def __init__(self, s: random.Random, backend: str | None = None):
        super().__init__(s)
        self.backend = backend

    def _spelled(self, code: str) -> str:
        """``code`` with deterministic mode's read and setters spelled as the program's backend flag's."""
        if self.backend is None:
            return code
        read, setter, default, other = BACKEND_FLAGS[self.backend]
        return (code.replace(_DET, read).replace("torch.use_deterministic_algorithms(True)", setter.format(repr(other)))
                .replace("torch.use_deterministic_algorithms(False)", setter.format(repr(default))))

    def prelude(self) -> list[str]:
        """The lines that reset the settings when the program is loaded (``PRELUDE``, and the backend flag's)."""
        if self.backend is None:
            return PRELUDE
        _, setter, default, _ = BACKEND_FLAGS[self.backend]
        return PRELUDE[:-2] + [setter.format(repr(default))] + PRELUDE[-2:]

    def statement(self, body) -> tuple[Stmt, str | None]:
        """A forward statement reading a process setting (``body`` is the program's ``gen_modules._Body``)."""
        s = self.s
        x, v = self.operands(body)
        if s.random() < 0.2:
            cond = self._spelled(s.choice((_FLAG, _DET, _SET, _DET)))
            return Stmt(f"if {cond}: m.u.mul_({s.choice((0.5, 2.0, -1.0))})", writes="m"), None
        t = body.tmp()
        expr = s.choice([f"{x} * 2.0 if {_FLAG} else {x} - {v}", f"{x} * {_SCALE}", f"{x} + {v} * {_SCALE}",
                         f"{x} + {v} if {_SET} else {x} * 0.5", f"{x}.tanh() if {_DET} else {x} + 1.0",
                         f"{x} @ m.w.t() if {_DET} else {x} * {_SCALE}", f"{x} * ({v} if {_DET} else {v}.tanh())"])
        return Stmt(f"{t} = {self._spelled(expr)}", target=t), t

    def rebinds(self) -> tuple[str, ...]:
        """One or two statements changing a process setting before a later call (the first call of a variant
        compiles again where its aliasing is new: the calls that run a cached program are the ones that tell)."""
        s = self.s
        return tuple(self._spelled(s.choice(_REBINDS)) for _ in range(s.choice((1, 1, 2))))


def draw(rng: random.Random) -> Proc | None:
    """The process-setting form of one program (None: the program holds none), from a generator seeded from
    ``rng``'s state without drawing from it."""
    s = own_stream(rng, "process")
    if not (P_PROC > 0 and s.random() < P_PROC):
        return None
    b = own_stream(rng, "backend")  # (Note [a backend flag in the deterministic-mode places])
    return Proc(s, b.choice(sorted(BACKEND_FLAGS)) if P_BACKEND > 0 and b.random() < P_BACKEND else None)


@contextlib.contextmanager
def isolated():
    """Run from the defaults (neither variable of ``VARS`` set, deterministic algorithms off) and give the process
    back as it was (Note [a process setting the forward branches on, changed between calls])."""
    saved = {k: os.environ.get(k) for k in VARS}
    det, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    flags = {name: _flag(name) for name in BACKEND_FLAGS}
    for k in VARS:
        os.environ.pop(k, None)
    torch.use_deterministic_algorithms(False)
    for name, (_, _, default, _) in BACKEND_FLAGS.items():
        _set_flag(name, default)
    try:
        yield
    finally:
        for name, value in flags.items():
            _set_flag(name, value)
        for k, value in saved.items():
            if value is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = value
        torch.use_deterministic_algorithms(det, warn_only=warn)


def _flag(name: str):
    read = BACKEND_FLAGS[name][0]
    return eval(read.split(" == ")[0], {"torch": torch})


def _set_flag(name: str, value) -> None:
    exec(BACKEND_FLAGS[name][1].format(repr(value)), {"torch": torch})
