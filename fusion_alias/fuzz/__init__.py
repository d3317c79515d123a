"""Differential fuzzer for programs that mutate aliased tensors.

Each fuzz case is a small random program over 1-4 tensor inputs that may share
memory (the same tensor twice, a view of another input, slices, transposes,
the two strided halves ``x[:, ::2]`` / ``x[:, 1::2]``, a scalar ``x[0, 0]``).
The body mixes view ops, in-place ops and out-of-place ops. The program is run
eagerly and through the system under test (by default
``fusion_alias.jit(prog, backend="reference", schedule=...)`` for every
adversarial schedule in ``fusion_alias.backends.reference.SCHEDULES``), each
time on freshly built inputs with the same aliasing, and the outputs and every
input/base/hidden tensor after the call are compared. The jitted function is
called at least twice (the second call hits the cache).

Generators (``program.GENERATORS``; the summary counts the programs of each):
``basic`` (the above, float32), ``dtype`` (f16, bf16, f64, int32/int64, bool,
complex64; integer division, in-place type promotion; statements added for eager's dtype rules: true
division, ``atan2_``/``copysign_`` into integers, ``alpha``, ops with no bool kernel, ``lerp``/``addcdiv``/
``addcmul`` of mixed dtypes, ``logical_*`` of a number, ``x - bool``: Note [dtype-rule statements],
dtype_rule_stmts.py), ``layout`` (reshape,
flatten, repeat, expand().reshape() of layouts that are not viewable, before
and after writes), ``hidden`` (tensors reached through globals, closure cells,
module buffers and argument attributes, aliasing an argument on some calls),
``calls`` (one program called with changing aliasing of same-shaped inputs:
independent -> the same tensor -> transposed -> ...), ``strided`` (writes into
``as_strided`` views whose elements overlap each other, which fusion_alias must
refuse, and neighbours that must match eager), ``fresh`` (in-place ops reading a
fresh result of the tensor they write: ``x.div_(x.norm())``, which must run);
the last two have a small weight, and the summary counts each generator's
refused runs; ``train`` (gradient mode: calls under ``torch.no_grad()`` with an
input that requires grad, writes through ``diagonal()`` with gradients, which
must be refused, a write under grad mode then one under no_grad read by the loss
after the call, a running statistic of ``x.detach()`` kept across calls; Note
[training calls in the fuzzer], gen_train.py and oracle.py), drawn among the
others only with ``--grad``; ``edges`` (one class per program of those hand probes
found: int8/uint8/int16, integer addcmul/lerp, memory formats, Python bool keys,
``Tensor.unfold``, stores into list/dict arguments, ``index_put`` with gradients,
foreach/``broadcast_tensors`` aliasing, RNG in-place methods; a refusal counts only where the class
documents it: Note [one class per program, and the refusals it may get], gen_edges.py); ``modules``
(drawn only when asked for: an ``nn.Module`` whose parameters are views of one flat tensor, tied
weights, buffers and a global, written by optimizer-like, EMA, running-statistic and KV-cache updates,
``.data``, grad-mode context managers; one module object per side kept over calls with changing
aliasing, its state and layout compared after every call: Note [module programs], gen_modules.py), ``order``
(drawn only when asked for: in-place ops whose operand overlaps what they write at other indices, kept
where eager runs them in memory order, in layouts the program made: Note [programs whose eager answer
depends on memory order], gen_order.py), ``autocast`` (drawn only when asked for: statements and products
of 2-D tensors under a bfloat16 ``torch.autocast``, gen_autocast.py), ``nograd`` (drawn only when asked for,
meant for ``--grad``: arguments sharing a base's memory with another gradient, made under ``torch.no_grad()``
or detached, leaves that are views, copies of a tensor's own values from another gradient, no_grad writes read
through views taken before them: Note [memory shared with another gradient], gen_nograd.py) and ``item`` (drawn
only when asked for: ``x.item()`` of written memory as a number in arithmetic, which must run, and in Python
decisions, ``if``/``max``/``int()``..., which fusion_alias must refuse, a run counting as a missed rejection: Note
[item() values in the fuzzer], gen_item.py) and ``ties`` (drawn only when asked for: tie-heavy bases, multiples of 1/2
or 1/4 with exact zeros and zero rows, read and written through views by ops whose gradient is decided at ties and
zeros, ``max(dim)``, ``prod``, ``pow(0)``, ``normalize``, ``clamp``, ``minimum``, ``lerp``, ``round``, ``%``...: Note
[ties and zeros in the fuzzer], gen_ties.py). A raise of the jitted call that eager does not make is a failure
unless plain ``thunder.jit`` raises the same or fusion_alias refuses clearly
(Note [what a raise of the jitted call counts as], driver.py).

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

    python -m fusion_alias.fuzz --programs 200 --seed 1 [--schedule all|NAME]
        [--time-budget SEC] [--unsafe-ignore-hazards] [--strict] [--allow-jit-errors]
        [--generator NAME ...] [--system fusion_alias|thunder|thunder-skip|eager]
        [--only INDEX] [--grad] [--strict-backward] [--verbose]

Python API: ``run_fuzz(programs=50, seed=0, ...) -> FuzzReport``.

Modules (the path of one fuzz case, in order):

* ``program``   -- the data model: ``Stmt``, ``Program``.
* ``generator`` -- ``generate_program(seed, index)``: picks a generator, grows the body against eager runs.
* ``gen_basic``, ``gen_dtype``, ``gen_layout``, ``gen_aliasing``, ``gen_strided``, ``gen_fresh``, ``gen_edges``,
  ``gen_item``, ``gen_ties`` -- the generators' inputs and statements (``dtype_rule_stmts``: the dtype generator's added
  ones; ``foreach_functions``, ``disjoint_views``, ``modules_view_rebinds``: session 45's forms, each from a stream of
  its own); ``gen_train`` -- whole programs of the training-call classes;
  ``gen_modules`` -- module programs, with their own rendering and ``check`` driver.
* ``hazard``    -- eager statement-by-statement runs: memory overlap, ``has_alias_hazard``.
* ``source``    -- rendering hidden-tensor holders, inputs per call, body and jit as Python source.
* ``oracle``    -- the ``check`` driver (eager vs jitted, per schedule), ``run_program``.
* ``shrinker``  -- ``shrink``: the smallest program that still fails the same way.
* ``driver``    -- ``run_fuzz`` and ``FuzzReport``.
* ``cli``       -- ``main``, behind ``python -m fusion_alias.fuzz``.
"""

from __future__ import annotations

from fusion_alias.fuzz.program import (
    CONSTANTS,
    GENERATORS,
    HIDDEN_KINDS,
    PARAM_NAMES,
    SYSTEMS,
    Program,
    Stmt,
    Variant,
)
from fusion_alias.fuzz.source import _holders_source, _make_inputs_source, _make_jit_source, _prog_source
from fusion_alias.fuzz.oracle import SCHEDULES, MakeJit, program_source, repro_source, run_program
from fusion_alias.fuzz.hazard import _build_inputs, _overlaps, _has_internal_overlap, eager_env, has_alias_hazard
from fusion_alias.fuzz.generator import generate_program
from fusion_alias.fuzz.shrinker import shrink
from fusion_alias.fuzz.driver import Failure, FuzzReport, run_fuzz
from fusion_alias.fuzz.cli import main

__all__ = [
    "Stmt",
    "Program",
    "Variant",
    "GENERATORS",
    "SCHEDULES",
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
