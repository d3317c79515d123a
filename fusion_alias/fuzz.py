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
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import sys
import time
import traceback
import warnings
from typing import Callable, Sequence

import torch

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

SCHEDULES = ("reads-first", "writes-first")
SYSTEMS = ("fusion_alias", "thunder", "thunder-skip", "eager")
PARAM_NAMES = ("a", "b", "c", "d")
CONSTANTS = (0.5, -0.25, 2.0, 0.75, -1.5, 0.125)

# --------------------------------------------------------------------------
# Program representation
# --------------------------------------------------------------------------


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


def _make_inputs_source(p: Program) -> str:
    lines = [
        "def make_inputs():",
        f"    g = torch.Generator().manual_seed({p.input_seed})",
    ]
    for name, shape in p.bases:
        if p.grad:  # a leaf that requires grad, and the base: a non-leaf eager may write into
            lines.append(f"    {name}_leaf = (torch.rand({shape!r}, generator=g) * 2 - 1).requires_grad_()")
            lines.append(f"    {name} = {name}_leaf * 1")
        else:
            lines.append(f"    {name} = torch.rand({shape!r}, generator=g) * 2 - 1")
    bases = ", ".join(n for n, _ in p.bases)
    args = ", ".join(e for _, e in p.args)
    if p.grad:
        leaves = ", ".join(f"{n}_leaf" for n, _ in p.bases)
        lines.append(f"    return [{bases}], [{args}], [{leaves}]")
    else:
        lines.append(f"    return [{bases}], [{args}]")
    return "\n".join(lines) + "\n"


def _prog_source(p: Program) -> str:
    lines = [f"def prog({', '.join(p.params)}):"]
    lines += [f"    {s.code}" for s in p.stmts]
    lines.append(f"    return ({''.join(r + ', ' for r in p.returns).rstrip()})")
    return "\n".join(lines) + "\n"


def _make_jit_source(system: str, unsafe: bool) -> str:
    if system == "fusion_alias":
        extra = ", unsafe_ignore_hazards=True" if unsafe else ""
        body = (
            "    import fusion_alias\n"
            f'    return fusion_alias.jit(fn, backend="reference", schedule=schedule{extra})\n'
        )
    elif system == "thunder":
        body = "    import thunder\n    return thunder.jit(fn)\n"
    elif system == "thunder-skip":
        body = "    import thunder\n    return thunder.jit(fn, skip_inplace_alias_updates=True)\n"
    elif system == "eager":
        body = "    return fn\n"
    else:  # a Python callable given to the API; not renderable
        body = "    raise NotImplementedError('custom system under test: supply make_jit')\n"
    return "def make_jit(fn, schedule):\n" + body


# Note [gradients in the fuzzer]
#     With ``--grad`` (``Program.grad``), every base is ``leaf * 1`` with a leaf
#     that requires grad, so eager accepts writes into the arguments. After each
#     call, a fixed random weighting of the outputs that require grad is summed
#     and back-propagated, and the leaves' gradients are compared with eager's
#     (a missing gradient counts as zeros: eager keeps a zero-gradient edge through
#     ``t0 = -b; t0.copy_(a)`` where Thunder has none). An error eager raises only in the
#     backward (a tensor saved for it was overwritten) makes the program not
#     comparable: it counts as both-raised. fusion_alias refuses writes into
#     inputs that require grad (Note [writes into inputs that require grad]);
#     such refusals count as unsupported, and every program it accepts must
#     match eager's values and gradients.
_DRIVER = '''
def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _run(fn):
    """(outputs, bases, args, leaf gradients, error, phase of the error) of one call on fresh inputs."""
    bases, args, *rest = make_inputs()
    leaves = rest[0] if rest else []  # --grad: the leaves the bases are derived from
    try:
        out = _as_list(fn(*args))
    except Exception as e:  # noqa: BLE001 - any exception counts as a rejection
        return None, bases, args, None, e, "forward"
    if leaves:
        try:
            weights = torch.Generator().manual_seed(1)
            diff = [o for o in out if isinstance(o, torch.Tensor) and o.requires_grad]
            if diff:
                sum((o * torch.rand(o.shape, generator=weights, dtype=o.dtype)).sum() for o in diff).backward()
        except Exception as e:  # noqa: BLE001
            return None, bases, args, None, e, "backward"
        out = [o.detach() if isinstance(o, torch.Tensor) else o for o in out]
    return out, bases, args, [leaf.grad for leaf in leaves], None, None


def check(schedule, make_jit=make_jit):
    """Eager vs jitted on fresh inputs, two calls. Returns (status, detail);
    status is ok, both-raised, jit-raised, missed-rejection or mismatch."""
    want, want_bases, want_args, want_grads, want_err, want_phase = _run(prog)
    if want_phase == "backward":
        return "both-raised", f"not comparable: eager's backward raised {want_err!r}"
    try:
        jitted = make_jit(prog, schedule)
    except Exception as e:  # noqa: BLE001
        if want_err is not None:
            return "both-raised", repr(e)
        return "jit-raised", "make_jit: " + "".join(traceback.format_exception(e))
    for call in (1, 2):
        got, got_bases, got_args, got_grads, got_err, got_phase = _run(jitted)
        if want_err is not None:
            if got_err is None:
                return "missed-rejection", f"call {call}: eager raised {want_err!r}; the jitted call returned"
            return "both-raised", f"eager: {want_err!r}; jitted: {got_err!r}"
        if got_err is not None:
            return "jit-raised", f"call {call} ({got_phase}): " + "".join(traceback.format_exception(got_err))
        compared = [("outputs", got, want), ("arguments after the call", got_args, want_args),
                    ("base tensors after the call", got_bases, want_bases)]
        if want_grads:  # None (no gradient flowed) stands for zeros: see Note [gradients in the fuzzer]
            zeros = [torch.zeros_like(b) for b in want_bases]
            compared.append(("leaf gradients (None as zeros)", [z if g is None else g for g, z in zip(got_grads, zeros)],
                             [z if w is None else w for w, z in zip(want_grads, zeros)]))
        for what, g, w in compared:
            try:
                torch.testing.assert_close(g, w, equal_nan=True)
            except AssertionError as e:
                return "mismatch", f"call {call}: {what} differ from eager:\\n{e}"
    return "ok", ""
'''


def program_source(p: Program, system: str = "fusion_alias", unsafe: bool = False) -> str:
    """The exact source the runner executes: inputs, program, jit, driver."""
    return (
        "import traceback\n\nimport torch\n\n\n"
        + _make_inputs_source(p)
        + "\n\n"
        + _prog_source(p)
        + "\n\n"
        + _make_jit_source(system, unsafe)
        + "\n"
        + _DRIVER
    )


def repro_source(p: Program, schedules: Sequence[str], system: str = "fusion_alias", unsafe: bool = False) -> str:
    """A self-contained script: ``program_source`` plus a ``__main__`` block."""
    return (
        f"# fusion_alias fuzz repro: program {p.name}\n"
        + program_source(p, system, unsafe)
        + "\n\nif __name__ == \"__main__\":\n"
        + "    failed = False\n"
        + f"    for schedule in {tuple(schedules)!r}:\n"
        + "        status, detail = check(schedule)\n"
        + "        print(schedule, status, detail)\n"
        + "        failed |= status in ('mismatch', 'missed-rejection')\n"
        + "    raise SystemExit(1 if failed else 0)\n"
    )


# --------------------------------------------------------------------------
# Executing statements one by one (for generation and hazard analysis)
# --------------------------------------------------------------------------


def _build_inputs(p: Program):
    """(bases, args) of ``p``, without gradients (the same values and aliasing)."""
    ns: dict = {"torch": torch}
    exec(compile(_make_inputs_source(p.replace(grad=False)), "<fuzz make_inputs>", "exec"), ns)
    return ns["make_inputs"]()


def _element_set(t: torch.Tensor) -> tuple[int, frozenset]:
    """(storage pointer, set of storage element offsets) of ``t``."""
    st = t.untyped_storage()
    n = st.nbytes() // t.element_size()
    idx = torch.arange(max(n, 1)).as_strided(t.size(), t.stride(), t.storage_offset())
    return st.data_ptr(), frozenset(idx.flatten().tolist())


def _overlaps(x: torch.Tensor, y: torch.Tensor) -> bool:
    px, ex = _element_set(x)
    py, ey = _element_set(y)
    return px == py and not ex.isdisjoint(ey)


def _has_internal_overlap(t: torch.Tensor) -> bool:
    return len(_element_set(t)[1]) < t.numel()


def _same_layout(dst: torch.Tensor, src: torch.Tensor) -> bool:
    """Whether ``src``, broadcast to ``dst``'s shape, reads each element of
    ``dst``'s memory at the same index that ``dst`` writes it."""
    try:
        src = src.expand(dst.shape)
    except RuntimeError:
        return False
    if dst.numel() == 0:
        return True
    if dst.data_ptr() != src.data_ptr():
        return False
    return all(n <= 1 or a == b for n, a, b in zip(dst.shape, dst.stride(), src.stride()))


def _ill_defined(s: Stmt, env: dict) -> bool:
    """Whether eager's result for ``s`` depends on its iteration order.

    Note [partial overlap within one op]
        An in-place op whose operand overlaps its destination at *different*
        indices (``b.mul_(a)`` with ``a = x[:, 1]``, ``b = x.t()``) has no
        defined result: PyTorch documents it as undefined and only rejects
        the cases its overlap check can prove. Eager CPU happens to run
        row-major, a fused kernel reads first, CUDA races. Such statements
        are not generated: the eager oracle would be arbitrary. An operand
        that *is* the destination (same memory, same index: ``a.add_(a)``,
        or ``a.add_(b)`` with ``b`` the same tensor passed twice) is fine.
    """
    if s.writes is None:
        return False
    try:
        dst = eval(s.code.split(" = ")[0], dict(_EXEC_GLOBALS), env) if s.target is None and " = " in s.code else env[s.writes]
    except Exception:  # noqa: BLE001
        return False
    for v in s.reads:
        t = env.get(v)
        if isinstance(t, torch.Tensor) and _overlaps(dst, t) and not _same_layout(dst, t):
            return True
    return False


_EXEC_GLOBALS = {"torch": torch}


def _exec_stmt(s: Stmt, env: dict) -> None:
    exec(s.code, _EXEC_GLOBALS, env)


def has_alias_hazard(p: Program) -> bool:
    """Whether ``p`` has an alias hazard (see Note [alias hazard, syntactically]).

    Runs ``p`` eagerly statement by statement to learn each variable's memory;
    statements after an eager error are ignored.
    """
    _, args = _build_inputs(p)
    env = dict(zip(p.params, args))
    identity = {name: name for name in p.params}
    accesses: list[tuple[str, str]] = []  # (kind, var) in program order
    for s in p.stmts:
        try:
            _exec_stmt(s, env)
        except Exception:  # noqa: BLE001
            break
        accesses += [("read", r) for r in s.reads]
        if s.writes is not None:
            accesses.append(("write", s.writes))
        if s.target is not None:
            identity[s.target] = identity[s.writes] if s.inplace_result else s.target
    else:
        accesses += [("read", r) for r in p.returns if r in env]
    written = {v for k, v in accesses if k == "write"}
    read = {v for k, v in accesses if k == "read"}
    for w in written:
        for r in read:
            if identity.get(r, r) == identity.get(w, w):
                continue
            if isinstance(env.get(r), torch.Tensor) and _overlaps(env[w], env[r]):
                return True
    return False


# --------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------

_BASE_SHAPES = ((4, 6), (4, 6), (4, 6), (6, 4), (2, 3, 4), (6,), (1, 6), (4, 1, 6))


def _index_expr(rng: random.Random, shape: Sequence[int]) -> str | None:
    """A random basic-indexing expression valid for ``shape`` (None for 0-d)."""
    if not shape:
        return None
    k = rng.randint(1, min(len(shape), 2))
    parts = []
    for d in range(k):
        n = shape[d]
        choice = rng.choice(("int", "range", "step", "step1", "from", "all") if n > 1 else ("int", "all"))
        if choice == "int":
            parts.append(str(rng.randrange(n)))
        elif choice == "range":
            lo = rng.randrange(n - 1)
            hi = rng.randint(lo + 1, n)
            parts.append(f"{lo}:{hi}")
        elif choice == "step":
            parts.append("::2")
        elif choice == "step1":
            parts.append("1::2")
        elif choice == "from":
            parts.append(f"{rng.randint(1, n - 1)}:")
        else:
            parts.append(":")
    if all(x == ":" for x in parts):
        parts[-1] = str(rng.randrange(shape[k - 1]))
    return "[" + ", ".join(parts) + "]"


def _alias_expr(rng: random.Random, base: str, shape: Sequence[int]) -> str:
    """An argument that aliases ``base``: itself, a slice, a transpose, a scalar..."""
    options = ["same", "index", "index"]
    if len(shape) >= 2:
        options += ["t", "halves", "scalar"]
    if len(shape) >= 1:
        options += ["flat"]
    kind = rng.choice(options)
    if kind == "same":
        return base
    if kind == "t":
        return f"{base}.transpose(0, 1)" if len(shape) > 2 else f"{base}.t()"
    if kind == "halves" and shape[1] > 1:
        return f"{base}[:, {rng.choice(('::2', '1::2'))}]"
    if kind == "scalar":
        return f"{base}[{', '.join(str(rng.randrange(n)) for n in shape)}]"
    if kind == "flat":
        return f"{base}.view(-1)"
    return f"{base}{_index_expr(rng, shape)}"


def _gen_inputs(rng: random.Random):
    nargs = rng.choice((1, 2, 2, 2, 3, 3, 4))
    bases: list[tuple[str, tuple[int, ...]]] = []
    args: list[tuple[str, str]] = []
    aliased = rng.random() < 0.8  # most programs get at least one aliased pair
    for i in range(nargs):
        new_base = not bases or (rng.random() < (0.2 if aliased else 0.8))
        if new_base:
            shape = rng.choice(_BASE_SHAPES)
            name = f"x{len(bases)}"
            bases.append((name, shape))
            # an argument is usually the base itself, sometimes a view of it
            expr = name if rng.random() < 0.75 else _alias_expr(rng, name, shape)
        else:
            name, shape = rng.choice(bases)
            expr = _alias_expr(rng, name, shape)
        args.append((PARAM_NAMES[i], expr))
    return tuple(bases), tuple(args)


def _factor_shapes(n: int) -> list[tuple[int, ...]]:
    out = [(n,)]
    for a in range(1, n + 1):
        if n % a == 0:
            out.append((a, n // a))
            for b in range(1, n // a + 1):
                if (n // a) % b == 0 and a * b * (n // a // b) == n and n // a // b > 0:
                    out.append((a, b, n // a // b))
    return out


class _Gen:
    """Generates one statement at a time against a live eager environment."""

    def __init__(self, rng: random.Random, env: dict, names: list[str]):
        self.rng = rng
        self.env = env
        self.names = names  # defined tensor variables, in definition order
        self.counter = 0

    def fresh(self) -> str:
        name = f"t{self.counter}"
        self.counter += 1
        return name

    def shape(self, v: str) -> tuple[int, ...]:
        return tuple(self.env[v].shape)

    def pick(self, writable: bool = False) -> str:
        names = self.names
        if writable:
            ok = [v for v in names if not _has_internal_overlap(self.env[v])]
            # 1 in 10: any variable (eager may reject: expanded tensors)
            if ok and self.rng.random() < 0.9:
                names = ok
        # prefer recent variables a little
        weights = [1.0 + 0.3 * i for i in range(len(names))]
        return self.rng.choices(names, weights)[0]

    def operand(self, x: str, inplace: bool) -> str:
        """A second operand for ``x``: a broadcast-compatible variable (often an
        alias of ``x``) or a constant."""
        rng = self.rng
        if rng.random() < 0.15:
            return repr(rng.choice(CONSTANTS))
        xs = self.shape(x)
        compatible, aliased = [], []
        for v in self.names:
            try:
                bs = torch.broadcast_shapes(xs, self.shape(v))
            except RuntimeError:
                continue
            if inplace and tuple(bs) != xs:
                continue
            compatible.append(v)
            if v != x and _overlaps(self.env[v], self.env[x]):
                aliased.append(v)
        if aliased and rng.random() < 0.6:
            return rng.choice(aliased)
        if compatible:
            return rng.choice(compatible)
        return repr(rng.choice(CONSTANTS))

    def _is_var(self, s: str) -> bool:
        return s in self.env

    # --- statement kinds -------------------------------------------------

    def view(self) -> Stmt:
        rng, x = self.rng, self.pick()
        sh = self.shape(x)
        nd = len(sh)
        kinds = ["reshape", "unsqueeze", "view"]
        if nd >= 1:
            kinds += ["index", "index", "select", "narrow", "expand"]
        if nd >= 2:
            kinds += ["t", "transpose", "permute"]
        if 1 in sh:
            kinds += ["squeeze"]
        kind = rng.choice(kinds)
        if kind == "index":
            e = f"{x}{_index_expr(rng, sh)}"
        elif kind == "reshape" or kind == "view":
            n = math.prod(sh)
            shape = rng.choice(_factor_shapes(n)) if n > 0 else (0,)
            arg = "-1" if rng.random() < 0.3 else ", ".join(map(str, shape))
            e = f"{x}.{kind}({arg})"
        elif kind == "select":
            d = rng.randrange(nd)
            e = f"{x}.select({d}, {rng.randrange(sh[d])})"
        elif kind == "narrow":
            d = rng.randrange(nd)
            start = rng.randrange(sh[d])
            e = f"{x}.narrow({d}, {start}, {rng.randint(1, sh[d] - start)})"
        elif kind == "expand":
            if 1 in sh and rng.random() < 0.6:
                new = [3 if s == 1 else s for s in sh]
            else:
                new = [2] + list(sh)
            e = f"{x}.expand({', '.join(map(str, new))})"
        elif kind == "t":
            e = f"{x}.t()" if nd == 2 else f"{x}.transpose(0, 1)"
        elif kind == "transpose":
            d0, d1 = rng.sample(range(nd), 2)
            e = f"{x}.transpose({d0}, {d1})"
        elif kind == "permute":
            perm = list(range(nd))
            rng.shuffle(perm)
            e = f"{x}.permute({', '.join(map(str, perm))})"
        elif kind == "squeeze":
            e = f"{x}.squeeze({sh.index(1)})" if rng.random() < 0.7 else f"{x}.squeeze()"
        else:  # unsqueeze
            e = f"{x}.unsqueeze({rng.randint(-nd - 1, nd)})"
        t = self.fresh()
        return Stmt(f"{t} = {e}", target=t, view_of=x)

    def inplace(self) -> Stmt:
        rng, x = self.rng, self.pick(writable=True)
        kind = rng.choices(("unary", "binary", "fill", "setitem"), (4, 5, 1, 2))[0]
        reads: tuple[str, ...] = (x,)
        if kind == "unary":
            op = rng.choices(
                ("tanh_()", "sin_()", "neg_()", "exp_()", "mul_(0.5)", "abs_()", "cos_()", "relu_()", "add_(0.25)",
                 "clamp_(-0.5, 0.5)"),
                (3, 3, 3, 1, 2, 1, 1, 1, 1, 1),
            )[0]
            e = f"{x}.{op}"
        elif kind == "binary":
            y = self.operand(x, inplace=True)
            op = rng.choices(("add_", "mul_", "sub_", "add_alpha", "copy_"), (3, 2, 2, 1, 2))[0]
            if op == "add_alpha":
                e = f"{x}.add_({y}, alpha={rng.choice(CONSTANTS)})"
            elif op == "copy_":
                if not self._is_var(y):
                    y = rng.choice(self.names)
                e = f"{x}.copy_({y})"
            else:
                e = f"{x}.{op}({y})"
            if op == "copy_":
                reads = (y,)
            else:
                reads = (x, y) if self._is_var(y) else (x,)
        elif kind == "fill":
            # Thunder 0.2.6 has no Tensor.fill_: keep it, but rarer than zero_()
            e = f"{x}.fill_({rng.choice(CONSTANTS)})" if rng.random() < 0.15 else f"{x}.zero_()"
            reads = ()
        else:  # setitem: a full statement, no result
            idx = _index_expr(rng, self.shape(x))
            if idx is None:
                idx = "[...]"
            try:
                dst_shape = tuple(self.env[x][eval(f"_i{idx}", {"_i": _Indexer()})].shape)
            except Exception:  # noqa: BLE001
                dst_shape = ()
            y = self._setitem_value(dst_shape)
            return Stmt(f"{x}{idx} = {y}", reads=(y,) if self._is_var(y) else (), writes=x)
        if rng.random() < 0.3:
            t = self.fresh()
            return Stmt(f"{t} = {e}", target=t, reads=reads, writes=x, inplace_result=True)
        return Stmt(e, reads=reads, writes=x)

    def bad_inplace(self) -> list[Stmt]:
        """Statements ending in an in-place write that eager rejects: its
        destination has internal overlap (an expanded view), or, half the time,
        an operand partially overlaps it (``x.add_(x[0], alpha=2)``)."""
        rng = self.rng
        if rng.random() < 0.5 and (bad := self._bad_operand()) is not None:
            return bad
        overlapping = [v for v in self.names if _has_internal_overlap(self.env[v])]
        pre: list[Stmt] = []
        if overlapping:
            x = rng.choice(overlapping)
        else:
            v = self.pick()
            x = self.fresh()
            pre.append(Stmt(f"{x} = {v}.expand({', '.join(map(str, (2, *self.shape(v))))})", target=x, view_of=v))
        op = rng.choice(("tanh_()", "add_(0.5)", "mul_(2.0)", "neg_()", f"add_({x})"))
        return pre + [Stmt(f"{x}.{op}", reads=(x,), writes=x)]

    def _bad_operand(self) -> list[Stmt] | None:
        """An in-place op whose operand partially overlaps its destination, spelled
        the ways Thunder decomposes further (alpha, addcmul's value, lerp, setitem):
        eager rejects them all (torch's ``assert_no_partial_overlap``)."""
        rng = self.rng
        x = self.pick(writable=True)
        xs = self.shape(x)
        if not xs:
            return None
        pre: list[Stmt] = []
        views = [f"{x}[0]", f"{x}[0:1]"]
        if len(xs) >= 2 and xs[-1] == xs[-2]:
            views.append(f"{x}.transpose(-1, -2)")
        y = self.fresh()
        pre.append(Stmt(f"{y} = {rng.choice(views)}", target=y, view_of=x))
        c = rng.choice(CONSTANTS)
        op = rng.choice((f"add_({y}, alpha={c})", f"sub_({y}, alpha={c})", f"addcmul_({y}, {x}, value={c})",
                         f"lerp_({y}, 0.5)", f"clamp_(min={y})", f"mul_({y})", f"div_({y}, rounding_mode='floor')"))
        return pre + [Stmt(f"{x}.{op}", reads=(x, y), writes=x)]

    def _setitem_value(self, dst_shape: tuple[int, ...]) -> str:
        rng = self.rng
        if rng.random() < 0.3:
            return repr(rng.choice(CONSTANTS))
        ok = []
        for v in self.names:
            try:
                if tuple(torch.broadcast_shapes(dst_shape, self.shape(v))) == dst_shape:
                    ok.append(v)
            except RuntimeError:
                pass
        return rng.choice(ok) if ok else repr(rng.choice(CONSTANTS))

    def outofplace(self) -> Stmt:
        rng, x = self.rng, self.pick()
        nd = len(self.shape(x))
        kind = rng.choices(("unary", "binary", "reduce"), (4, 4, 2 if nd else 0))[0]
        reads: tuple[str, ...] = (x,)
        if kind == "unary":
            e = rng.choices(
                (f"torch.tanh({x})", f"{x}.sin()", f"-{x}", f"{x} * 0.5", f"{x}.exp()", f"torch.sigmoid({x})",
                 f"{x}.abs()", f"{x}.clone()", f"{x}.cos()", f"torch.relu({x})"),
                (3, 3, 2, 3, 1, 1, 1, 1, 1, 1),
            )[0]
        elif kind == "binary":
            y = self.operand(x, inplace=False)
            e = rng.choice((f"{x} + {y}", f"{x} * {y}", f"{x} - {y}", f"torch.maximum({x}, {y})",
                            f"{x}.add({y}, alpha=0.5)", f"torch.where({x} > 0, {x}, {y})"))
            if e.startswith("torch.maximum") and not self._is_var(y):
                e = f"{x} * {y}"
            reads = (x, y) if self._is_var(y) else (x,)
        else:
            d = rng.randrange(-nd, nd)
            e = rng.choice((f"{x}.sum()", f"{x}.sum({d}, keepdim=True)", f"{x}.amax({d}, keepdim=True)",
                            f"{x}.mean({d})", f"{x}.sum({d})", f"{x}.amax({d})"))
        t = self.fresh()
        return Stmt(f"{t} = {e}", target=t, reads=reads)

    def statement(self) -> Stmt:
        kind = self.rng.choices(("view", "inplace", "outofplace"), (3, 5, 3))[0]
        return getattr(self, kind)()


class _Indexer:
    def __getitem__(self, idx):
        return idx


def generate_program(seed: int, index: int, max_stmts: int = 8, error_rate: float = 0.05) -> Program:
    """Program ``index`` of the stream for ``seed`` (deterministic).

    Statements are validated one by one against an eager run; a statement that
    eager rejects is dropped. With probability ``error_rate`` the program ends
    in an in-place write to a tensor with internal overlap (an expanded view),
    which eager rejects: the jitted program must then raise too.
    """
    rng = random.Random(f"fusion_alias.fuzz:{seed}:{index}")
    bases, args = _gen_inputs(rng)
    p = Program(
        name=f"seed {seed} #{index}",
        input_seed=rng.randrange(2**31),
        bases=bases,
        args=args,
        stmts=(),
        returns=(),
    )
    _, arg_tensors = _build_inputs(p)
    env = dict(zip(p.params, arg_tensors))
    gen = _Gen(rng, env, list(p.params))
    stmts: list[Stmt] = []
    n = rng.randint(2, max_stmts)
    attempts = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while len(stmts) < n and attempts < 20 * n:
            attempts += 1
            s = gen.statement()
            if _ill_defined(s, env):
                continue
            try:
                _exec_stmt(s, env)
            except Exception:  # noqa: BLE001
                if s.target is not None:
                    env.pop(s.target, None)
                continue
            stmts.append(s)
            if s.target is not None:
                gen.names.append(s.target)
        if rng.random() < error_rate:
            bad = gen.bad_inplace()
            try:
                for s in bad[:-1]:
                    _exec_stmt(s, env)
                _exec_stmt(bad[-1], env)
            except Exception:  # noqa: BLE001 - the expected outcome
                stmts += bad
                gen.names += [s.target for s in bad if s.target is not None]
    # returns: some intermediates and some inputs
    intermediates = [v for v in gen.names if v not in p.params]
    k = rng.choice((1, 1, 2, 2, 3))
    rets: list[str] = []
    for _ in range(k):
        pool = intermediates if intermediates and rng.random() < 0.7 else list(p.params)
        v = rng.choice(pool)
        if v not in rets:
            rets.append(v)
    return p.replace(stmts=tuple(stmts), returns=tuple(rets))


# --------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Failure:
    program: Program
    schedule: str
    status: str  # mismatch | missed-rejection
    detail: str
    repro: str
    shrunk: Program | None = None
    shrunk_repro: str | None = None
    shrunk_detail: str | None = None


@dataclasses.dataclass
class FuzzReport:
    programs: int = 0
    seconds: float = 0.0
    hazards: int = 0
    ok: int = 0
    both_raised: int = 0
    mismatches: list[Failure] = dataclasses.field(default_factory=list)
    missed_rejections: list[Failure] = dataclasses.field(default_factory=list)
    unsupported: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (program, schedule, msg)
    jit_errors: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    # --grad: wrong gradients of programs with no in-place op, where plain thunder.jit is wrong too
    thunder_autodiff: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)

    @property
    def failures(self) -> list[Failure]:
        return self.mismatches + self.missed_rejections

    @property
    def programs_per_second(self) -> float:
        return self.programs / self.seconds if self.seconds > 0 else float("nan")

    def summary(self) -> str:
        frac = self.hazards / self.programs if self.programs else 0.0
        return (
            f"fuzz summary: programs={self.programs} seconds={self.seconds:.1f} "
            f"programs/s={self.programs_per_second:.2f} with-hazard={self.hazards} ({frac:.0%}) "
            f"mismatches={len(self.mismatches)} missed-rejections={len(self.missed_rejections)} "
            f"jit-unsupported={len(self.unsupported)} jit-errors={len(self.jit_errors)} "
            f"both-raised={self.both_raised}"
            + (f" thunder-autodiff={len(self.thunder_autodiff)}" if self.thunder_autodiff else "")
        )

    def exit_code(self, strict: bool = False) -> int:
        bad = bool(self.failures) or (strict and bool(self.unsupported or self.jit_errors))
        return 1 if bad else 0


MakeJit = Callable[[Callable, str], Callable]


def _load(p: Program, system: str, unsafe: bool) -> dict:
    src = program_source(p, system, unsafe)
    ns: dict = {"__name__": f"fusion_alias_fuzz_program"}
    exec(compile(src, f"<fuzz program {p.name}>", "exec"), ns)
    return ns


def run_program(
    p: Program, schedule: str, system: str = "fusion_alias", unsafe: bool = False, make_jit: MakeJit | None = None
) -> tuple[str, str]:
    """Run ``p``'s own ``check(schedule)``: returns (status, detail)."""
    ns = _load(p, system, unsafe)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if make_jit is not None:
            return ns["check"](schedule, make_jit)
        return ns["check"](schedule)


def _is_unsupported(detail: str) -> bool:
    low = detail.lower()
    return any(
        k in low
        for k in ("notimplemented", "not supported", "unsupported", "not implemented", "unknown attribute")
    )


def shrink(
    p: Program,
    schedule: str,
    status: str,
    system: str = "fusion_alias",
    unsafe: bool = False,
    make_jit: MakeJit | None = None,
    max_tries: int = 200,
) -> tuple[Program, str]:
    """Greedy shrinking: drop statements, returns and unused inputs one at a
    time while ``check(schedule)`` still reports ``status``."""
    detail = ""
    tries = 0

    def still_fails(q: Program) -> str | None:
        nonlocal tries
        tries += 1
        try:
            st, det = run_program(q, schedule, system, unsafe, make_jit)
        except Exception:  # noqa: BLE001
            return None
        return det if st == status else None

    progress = True
    while progress and tries < max_tries:
        progress = False
        for i in reversed(range(len(p.stmts))):
            q = p.replace(stmts=p.stmts[:i] + p.stmts[i + 1 :])
            d = still_fails(q)
            if d is not None:
                p, detail, progress = q, d, True
        for i in reversed(range(len(p.returns))):
            q = p.replace(returns=p.returns[:i] + p.returns[i + 1 :])
            d = still_fails(q)
            if d is not None:
                p, detail, progress = q, d, True
        used = " ".join(s.code for s in p.stmts) + " " + " ".join(p.returns)
        for i in reversed(range(len(p.args))):
            name = p.args[i][0]
            if _uses(used, name):
                continue
            q = p.replace(args=p.args[:i] + p.args[i + 1 :])
            d = still_fails(q)
            if d is not None:
                p, detail, progress = q, d, True
        # de-alias an argument (same values, own memory): shows which aliasing matters
        for i in reversed(range(len(p.args))):
            name, expr = p.args[i]
            if expr.endswith(".clone()"):
                continue
            q = p.replace(args=p.args[:i] + ((name, f"{expr}.clone()"),) + p.args[i + 1 :])
            d = still_fails(q)
            if d is not None:
                p, detail, progress = q, d, True
    # drop bases no argument refers to
    kept = tuple(b for b in p.bases if any(_uses(e, b[0]) for _, e in p.args))
    if kept != p.bases:
        q = p.replace(bases=kept)
        # the seeded values change when a base is dropped; keep it only if it still fails
        d = still_fails(q)
        if d is not None:
            p, detail = q, d
    return p, detail


def _uses(text: str, name: str) -> bool:
    import re

    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def run_fuzz(
    programs: int = 100,
    seed: int = 0,
    schedules: Sequence[str] = SCHEDULES,
    time_budget: float | None = None,
    unsafe_ignore_hazards: bool = False,
    system: str = "fusion_alias",
    make_jit: MakeJit | None = None,
    max_stmts: int = 8,
    error_rate: float = 0.05,
    do_shrink: bool = True,
    stop_after_failures: int | None = None,
    only: Sequence[int] | None = None,
    verbose: bool = False,
    log: Callable[[str], None] | None = None,
    grad: bool = False,
) -> FuzzReport:
    """Generate and run ``programs`` programs; returns a ``FuzzReport``.

    ``system``: ``fusion_alias`` (``fusion_alias.jit`` with the reference
    backend; ``unsafe_ignore_hazards`` passed through), or a stand-in:
    ``thunder`` (``thunder.jit``), ``thunder-skip`` (``thunder.jit(...,
    skip_inplace_alias_updates=True)``), ``eager``. ``make_jit(fn, schedule)``
    overrides the system with any callable (repros then cannot be rendered
    with it). Stand-ins ignore the schedule, so they run once per program.
    ``grad``: inputs require grad and gradients are compared too (Note
    [gradients in the fuzzer]).
    """
    log = log or (lambda s: None)
    if system != "fusion_alias" and make_jit is None:
        schedules = schedules[:1]
    report = FuzzReport()
    start = time.perf_counter()
    indices = list(only) if only is not None else range(programs)
    for index in indices:
        if time_budget is not None and time.perf_counter() - start > time_budget:
            log(f"time budget of {time_budget}s spent after {report.programs} programs")
            break
        p = generate_program(seed, index, max_stmts=max_stmts, error_rate=error_rate)
        if grad:
            p = p.replace(grad=True)
        report.programs += 1
        hazard = has_alias_hazard(p)
        report.hazards += hazard
        if verbose:
            log(f"--- program {p.name} (hazard={hazard})\n{_make_inputs_source(p)}{_prog_source(p)}")
        for schedule in schedules:
            try:
                status, detail = run_program(p, schedule, system, unsafe_ignore_hazards, make_jit)
            except Exception as e:  # noqa: BLE001 - harness error: report as a jit error
                status, detail = "jit-raised", "harness: " + "".join(traceback.format_exception(e))
            if verbose:
                log(f"    {schedule}: {status}")
            if status == "ok":
                report.ok += 1
            elif status == "both-raised":
                report.both_raised += 1
            elif status == "jit-raised":
                kind = report.unsupported if _is_unsupported(detail) else report.jit_errors
                kind.append((p.name, schedule, _last_line(detail)))
                log(f"program {p.name} [{schedule}]: jit raised ({'unsupported' if kind is report.unsupported else 'error'}): {_last_line(detail)}")
                if verbose:
                    log(detail)
            elif _thunder_autodiff_bug(p, status, system, make_jit):
                report.thunder_autodiff.append((p.name, schedule, _last_line(detail)))
                log(f"program {p.name} [{schedule}]: wrong gradient with no in-place op, plain thunder.jit too "
                    f"(Thunder's autodiff, not an alias program): {_last_line(detail)}")
            else:
                f = Failure(p, schedule, status, detail, repro_source(p, (schedule,), system, unsafe_ignore_hazards))
                (report.mismatches if status == "mismatch" else report.missed_rejections).append(f)
                log(f"\n=== {status.upper()}: program {p.name}, schedule {schedule}\n{detail}\n--- repro:\n{f.repro}")
                if do_shrink:
                    f.shrunk, f.shrunk_detail = shrink(p, schedule, status, system, unsafe_ignore_hazards, make_jit)
                    f.shrunk_detail = f.shrunk_detail or detail
                    f.shrunk_repro = repro_source(f.shrunk, (schedule,), system, unsafe_ignore_hazards)
                    log(f"--- shrunk repro ({len(f.shrunk.stmts)} statements):\n{f.shrunk_repro}\n--- shrunk failure:\n{f.shrunk_detail}\n")
                break  # one failure per program is enough
        if stop_after_failures is not None and len(report.failures) >= stop_after_failures:
            break
    report.seconds = time.perf_counter() - start
    return report


def _thunder_autodiff_bug(p: Program, status: str, system: str, make_jit) -> bool:
    """A --grad mismatch in a program with no in-place op that plain ``thunder.jit`` gets wrong too.

    Such a program has nothing to alias-check: fusion_alias hands it to Thunder's
    autodiff unchanged (Thunder 0.2.6 gets ``torch.where(a > 0, a, a)`` with a 0-d
    ``a`` wrong, for one). It is reported, not counted as a failure of ours.
    """
    if not p.grad or status != "mismatch" or system != "fusion_alias" or make_jit is not None:
        return False
    if any(s.writes is not None for s in p.stmts):
        return False
    try:
        thunder_status, _ = run_program(p, SCHEDULES[0], "thunder")
    except Exception:  # noqa: BLE001
        return False
    return thunder_status == "mismatch"


def _last_line(s: str) -> str:
    lines = [ln for ln in s.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fusion_alias.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=100, help="number of programs (default 100)")
    ap.add_argument("--seed", type=int, default=0, help="generator seed; same seed, same programs")
    ap.add_argument("--schedule", choices=(*SCHEDULES, "both"), default="both")
    ap.add_argument("--time-budget", type=float, default=None, metavar="SEC", help="stop starting programs after SEC")
    ap.add_argument("--unsafe-ignore-hazards", action="store_true",
                    help="pass unsafe_ignore_hazards=True to fusion_alias.jit (the fuzzer should then fail)")
    ap.add_argument("--strict", action="store_true", help="also fail when the jitted call raises where eager does not")
    ap.add_argument("--system", choices=SYSTEMS, default="fusion_alias",
                    help="system under test; thunder/thunder-skip/eager are stand-ins for testing the harness")
    ap.add_argument("--max-stmts", type=int, default=8)
    ap.add_argument("--error-rate", type=float, default=0.05,
                    help="probability per eager-rejected candidate statement of keeping it (tests rejections)")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--max-failures", type=int, default=5, help="stop after this many failing programs")
    ap.add_argument("--only", type=int, action="append", metavar="INDEX", help="run only program INDEX (repeatable)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--grad", action="store_true",
                    help="inputs derived from leaves that require grad; compare gradients too")
    ns = ap.parse_args(argv)
    schedules = SCHEDULES if ns.schedule == "both" else (ns.schedule,)
    if ns.system == "fusion_alias":
        import fusion_alias

        if not hasattr(fusion_alias, "jit"):
            print("fusion_alias.jit does not exist yet; use --system thunder|thunder-skip|eager", file=sys.stderr)
            return 2
    report = run_fuzz(
        programs=ns.programs,
        seed=ns.seed,
        schedules=schedules,
        time_budget=ns.time_budget,
        unsafe_ignore_hazards=ns.unsafe_ignore_hazards,
        system=ns.system,
        max_stmts=ns.max_stmts,
        error_rate=ns.error_rate,
        do_shrink=not ns.no_shrink,
        stop_after_failures=ns.max_failures,
        only=ns.only,
        verbose=ns.verbose,
        log=lambda s: print(s, flush=True),
        grad=ns.grad,
    )
    if report.unsupported:
        print(f"jit raised 'unsupported' on {len(report.unsupported)} runs:")
        for name, sched, msg in report.unsupported[:10]:
            print(f"  {name} [{sched}]: {msg}")
    if report.jit_errors:
        print(f"jit raised other errors on {len(report.jit_errors)} runs:")
        for name, sched, msg in report.jit_errors[:10]:
            print(f"  {name} [{sched}]: {msg}")
    for f in report.failures:
        print(f"{f.status}: program {f.program.name} [{f.schedule}]"
              + (f", shrunk to {len(f.shrunk.stmts)} statements" if f.shrunk else ""))
    print(report.summary())
    return report.exit_code(ns.strict)


if __name__ == "__main__":
    sys.exit(main())
