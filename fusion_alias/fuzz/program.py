"""The fuzzer's data model: a program is base tensors, arguments over them, and
a list of statements over variable names (see Note [the repro is what ran] in
the package docstring)."""

from __future__ import annotations

import dataclasses

SYSTEMS = ("fusion_alias", "thunder", "thunder-skip", "eager")
PARAM_NAMES = ("a", "b", "c", "d")
CONSTANTS = (0.5, -0.25, 2.0, 0.75, -1.5, 0.125)


@dataclasses.dataclass(frozen=True)
class Stmt:
    """One line of a program body.

    ``code`` is the full Python line (``t0 = a.t()``, ``a.tanh_()``,
    ``a[:, 1] = b``). ``target`` is the name it binds (or None), ``reads``
    the variables whose *values* it reads, ``writes`` the variable it mutates
    in place (or None), ``view_of`` the variable whose memory a view shares,
    ``inplace_result`` whether ``target`` is the result of the in-place op
    (and so has the identity of ``writes``).
    """

    code: str
    target: str | None = None
    reads: tuple[str, ...] = ()
    writes: str | None = None
    view_of: str | None = None
    inplace_result: bool = False


@dataclasses.dataclass(frozen=True)
class Program:
    """A generated program: base tensors, arguments derived from them, body."""

    name: str  # e.g. "seed 1 #17"
    input_seed: int
    bases: tuple[tuple[str, tuple[int, ...]], ...]  # (name, shape)
    args: tuple[tuple[str, str], ...]  # (param name, expression over bases)
    stmts: tuple[Stmt, ...]
    returns: tuple[str, ...]
    grad: bool = False  # bases derived from leaves that require grad; gradients compared too

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.args)

    def replace(self, **kw) -> "Program":
        return dataclasses.replace(self, **kw)
