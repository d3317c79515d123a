"""Differential fuzzer for programs that mutate aliased tensors.

Each fuzz case is a small random program over 1-4 tensor inputs that may share
memory (the same tensor twice, a view of another input, slices, transposes,
the two strided halves ``x[:, ::2]`` / ``x[:, 1::2]``, a scalar ``x[0, 0]``).
The body mixes view ops, in-place ops and out-of-place ops. The program is run
eagerly and through the system under test (by default
``fusion_alias.jit(prog, backend="reference", schedule=...)`` for both
adversarial schedules), each time on freshly built inputs with the same
aliasing, and the outputs and every input/base tensor after the call are
compared. The jitted function is called twice (the second call hits the cache).

Note [the repro is what ran]
    A program is a list of statements over variable names. It is rendered to
    plain Python source: ``make_inputs()`` (seeded base tensors and the views
    passed as arguments), ``def prog(...)``, ``make_jit(fn, schedule)`` and a
    ``check(schedule)`` driver. The runner ``exec``s exactly that source and
    calls its ``check``; a failure report prints the same source with a
    ``__main__`` block, so pasting it into a file reproduces the failure.

Note [alias hazard, syntactically]
    Every variable has an *identity*: its own name, except the result of an
    in-place op (``c = a.tanh_()``), which has the identity of the tensor it
    wrote. A program contains an alias hazard when some statement writes in
    place to a variable ``w`` and some statement (or the return) reads a
    variable ``r`` of a different identity whose memory overlaps ``w``'s. The
    overlap is computed exactly on the element offsets of the tensors in an
    eager run, so ``x[:, ::2]`` and ``x[:, 1::2]`` do not overlap, while ``a``
    and ``a.view(-1)`` do. Creating a view is not a read.

Command line::

    python -m fusion_alias.fuzz --programs 200 --seed 1 [--schedule both]
        [--time-budget SEC] [--unsafe-ignore-hazards] [--strict] [--verbose]
        [--system fusion_alias|thunder|thunder-skip|eager] [--only INDEX]

Python API: ``run_fuzz(programs=50, seed=0, ...) -> FuzzReport``.

Modules (the path of one fuzz case, in order):

* ``program``   -- the data model: ``Stmt``, ``Program``.
* ``generator`` -- ``generate_program(seed, index)``: inputs and body, validated eagerly.
* ``hazard``    -- eager statement-by-statement runs: memory overlap, ``has_alias_hazard``.
* ``source``    -- rendering inputs, body and jit as Python source.
* ``oracle``    -- the ``check`` driver (eager vs jitted, per schedule), ``run_program``.
* ``shrinker``  -- ``shrink``: the smallest program that still fails the same way.
* ``driver``    -- ``run_fuzz`` and ``FuzzReport``.
* ``cli``       -- ``main``, behind ``python -m fusion_alias.fuzz``.
"""

from __future__ import annotations

from fusion_alias.fuzz.program import CONSTANTS, PARAM_NAMES, SYSTEMS, Program, Stmt
from fusion_alias.fuzz.source import _make_inputs_source, _make_jit_source, _prog_source
from fusion_alias.fuzz.oracle import SCHEDULES, MakeJit, program_source, repro_source, run_program
from fusion_alias.fuzz.hazard import _build_inputs, _overlaps, _has_internal_overlap, has_alias_hazard
from fusion_alias.fuzz.generator import generate_program
from fusion_alias.fuzz.shrinker import shrink
from fusion_alias.fuzz.driver import Failure, FuzzReport, run_fuzz
from fusion_alias.fuzz.cli import main

__all__ = [
    "Stmt",
    "Program",
    "generate_program",
    "program_source",
    "repro_source",
    "has_alias_hazard",
    "run_program",
    "shrink",
    "run_fuzz",
    "FuzzReport",
    "Failure",
    "main",
]
