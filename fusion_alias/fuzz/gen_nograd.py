"""The nograd generator: memory that requires grad, reached with another gradient (hostile probe, session 25).

Note [memory shared with another gradient]
    Session 25's hostile probe found wrong gradients, silently, in calls that compute them, in classes no
    generator made: one memory reached through tensors that carry different gradients. The ``--grad`` bases
    are ``x_leaf * 1`` or leaves made directly, and the other generators' arguments are plain views of them,
    so every alias of a base carried the base's own gradient. This generator builds whole programs (as
    gen_train.py does) of a host ``h`` (a base, with ``--grad`` one of three kinds, ``Program.base_grad``):

        nonleaf    x0_leaf = (...).requires_grad_(); x0 = x0_leaf * 1
        leaf       x0 = (...).requires_grad_()
        leaf_view  x0 = (torch.rand((12,), generator=g) * 2 - 1).view(3, 4).requires_grad_()   # a leaf with a _base

    a row argument ``x`` of the host's memory that carries another gradient or none, changing from call to
    call (Note [calls with changing aliasing]), and sometimes a whole-host argument ``y`` made the same ways::

        no_grad    torch.no_grad()(lambda: x0[1])()     # requires grad, no history (with torch.no_grad(): b = x0[1])
        detach     x0.detach()[1]                      # or x0.data[1] (Note [a detached alias spelled .data])
        view       x0[1]                               # the host's own gradient
        other      x1[1]                               # unrelated memory

    and a body of one to three of these moves, then a grad-mode read of every float tensor so the gradient
    reaches every input (``t = (h * 0.5).sum() + x.tanh().sum() + (v * v).sum()``):

        copy       a copy of the host's own values from another gradient: ``h[1].copy_(x)``, ``h[1] = x``,
                   ``h.copy_(h.detach())``, ``h.copy_(y)``, or from a view the body takes
                   (``d = h.detach()[1]``, ``with torch.no_grad(): d = h[1]``), into the host or into
                   ``t0 = h * 2`` (a leaf host is written only under no_grad in eager)
        write      a write under ``with torch.no_grad():`` through the host, a row of it, or an argument
                   (``x.mul_(0.5)``, ``h[2].zero_()``, ``x.add_(1.0)``)
        view       a view taken before such a write and read after it (``v = h[0]``; no_grad write of ``h``
                   or of ``x``; ``(v * 2).sum()``)
        grad       a grad-mode write through an argument (``x.mul_(2.0)``, ``h[2].add_(x)``)
        index      ``index_fill_`` of an int64 ``k`` whose index is ``k``'s own memory in some calls
                   (``k[:2].index_fill_(1, j, -1)`` with ``j`` = ``x2[2, :3]``, apart, or ``x2[1, 3:6]``,
                   overlapping: eager raises; ``k.index_fill_(1, k[2, :3], -1)``)

    Eager raises on some of these (an in-place op on a leaf, or on a view made under no_grad, in grad mode):
    such a call must raise in the jitted function too. A draw is kept when eager's own run of every call is
    defined (no operand overlapping what it writes at other indices, Note [partial overlap within one op]) and
    some call runs (a draw where every call raises is kept one time in five). Without ``--grad`` the same
    programs run with no input that requires grad, and must match eager. Drawn only when asked for
    (``--generator nograd``): the default streams stay as they were.
"""

from __future__ import annotations

import random
import re

import torch

from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.fuzz.hazard import _EXEC_GLOBALS, _exec_stmt, _overlaps, _same_layout, eager_env
from fusion_alias.fuzz.oracle import run_program
from fusion_alias.fuzz.program import Program, Stmt, Variant, StatementBuilder

HOST_SHAPES = ((3, 4), (4, 4), (4, 3))
GRAD_KINDS = ("nonleaf", "leaf", "leaf_view")
_GRAD_WEIGHTS = (2, 1, 2)
ARG_KINDS = ("no_grad", "detach", "view", "other")
MOVES = ("copy", "write", "view", "grad", "index")
_MOVE_WEIGHTS = (4, 3, 3, 1, 1)
_OPS = ("mul_(0.5)", "add_(1.0)", "zero_()", "sub_(0.25)", "mul_(-1.5)")
_CONSTS = (0.5, 2.0, -1.5, 0.25, 3.0)


# Note [a detached alias spelled .data]
# ---------------------------------------
# ``x0.data[1]`` is ``x0.detach()[1]`` but for the version counter: it does not share ``x0``'s, so a write
# through it after ``x0`` was saved for the backward is no error in eager (the backward reads the new
# values), where ``detach()``'s is. Session 42 let such an input join ``x0``'s memory as a detached alias
# (leaf_views.py, Note [an input that is a detached alias of one that requires grad]); both spellings are
# that class. Decided per program by a draw of its own (seeded by the program's name), so that the main
# stream, and the programs earlier sessions pinned, draw as before; a pinned program spelled ``.detach()``
# may now be spelled ``.data``.
P_DATA_SPELLING = 0.3


def _arg_expr(kind: str, host: str, other: str | None, row: int | None, data: bool = False) -> str:
    """The expression of an argument of ``kind`` over ``host`` (``row``: one row; None: the whole host;
    ``data``: a detached alias spelled ``.data``, Note [a detached alias spelled .data])."""
    part = "" if row is None else f"[{row}]"
    if kind == "no_grad":
        return f"torch.no_grad()(lambda: {host}{part or '[:]'})()"
    if kind == "detach":
        return f"{host}.data{part}" if data else f"{host}.detach(){part}"
    if kind == "view":
        return f"{host}{part}" if part else f"{host}.view_as({host})"
    return f"{other}{part}"


class _Builder(StatementBuilder):
    """Bases, arguments per call, statements and returns of one program."""

    def __init__(self, rng: random.Random):
        super().__init__(rng)
        self.bases: list[tuple[str, tuple[int, ...]]] = []
        self.base_grad: list[tuple[str, str]] = []
        self.dtypes: list[tuple[str, str]] = []
        self.args: list[tuple[str, list[str]]] = []  # (parameter, expression of each call's variant)
        self.floats: list[str] = []  # float tensors the final read reads
        self.returns: list[str] = []
        self.moves: list[str] = []

    def base(self, shape: tuple[int, ...], how: str = "nonleaf", dtype: str = "float32") -> str:
        name = f"x{len(self.bases)}"
        self.bases.append((name, shape))
        if how != "nonleaf":
            self.base_grad.append((name, how))
        if dtype != "float32":
            self.dtypes.append((name, dtype))
        return name

    def c(self) -> float:
        return self.rng.choice(_CONSTS)


def _draw(name: str, rng: random.Random) -> Program:
    b = _Builder(rng)
    r, c = rng.choice(HOST_SHAPES)
    host = b.base((r, c), rng.choices(GRAD_KINDS, _GRAD_WEIGHTS)[0])
    other = b.base((r, c), rng.choice(("nonleaf", "leaf", "leaf_view", "none"))) if rng.random() < 0.6 else None
    kinds = [k for k in ARG_KINDS if other is not None or k != "other"]
    calls = rng.choice((1, 2, 2, 3, 4))  # variants: 0, and the aliasings of the later calls
    i = rng.randrange(r)  # the row the argument is, and the copies write
    data = random.Random(f"{name} .data").random() < P_DATA_SPELLING  # (its own draw: Note [a detached alias spelled .data])

    def per_call(whole: bool) -> list[str]:
        order = rng.sample(kinds, len(kinds))
        return [_arg_expr(order[v % len(order)], host, other, None if whole else i, data) for v in range(calls)]

    h, x = "h", "x"
    b.args.append((h, [host] * calls))
    b.args.append((x, per_call(False)))
    b.floats += [h, x]
    y = None
    if rng.random() < 0.35:
        y = "y"
        b.args.append((y, per_call(True)))
        b.floats.append(y)
    leafy = dict(b.base_grad).get(host, "nonleaf") != "nonleaf"
    n = rng.choice((1, 2, 2, 3))
    moves = [rng.choices(MOVES, _MOVE_WEIGHTS)[0] for _ in range(n)]
    if "copy" not in moves and "write" not in moves and "view" not in moves:
        moves[0] = rng.choice(("copy", "write", "view"))
    reads_after: list[str] = []  # views read by the final statement only
    for move in moves:
        b.moves.append(move)
        if move == "copy":
            _copy(b, h, x, y, i, leafy)
        elif move == "write":
            _write(b, h, x, y, r)
        elif move == "view":
            reads_after.append(_view_then_write(b, h, x, r))
        elif move == "grad":
            j = rng.randrange(r)
            code, reads, writes = rng.choice(((f"{x}.mul_({b.c()})", (x,), x), (f"{h}[{j}].add_({x})", (h, x), h),
                                              (f"{x}.add_({h}[{i}])", (x, h), x), (f"{h}.mul_({b.c()})", (h,), h)))
            b.add(code, reads=reads, writes=writes)
        else:
            _index_fill(b, calls)
    floats = list(dict.fromkeys(b.floats + reads_after))
    terms = []
    for v in floats:
        k = rng.randrange(3)
        terms.append((f"({v} * {b.c()}).sum()", f"{v}.tanh().sum()", f"({v} * {v}).sum()")[k])
    t = b.tmp()
    b.add(f"{t} = {' + '.join(terms)}", target=t, reads=tuple(floats))
    b.returns.insert(0, t)
    if rng.random() < 0.4:
        b.returns.append(rng.choice(floats))
    params = [p for p, _ in b.args]
    variants = [Variant(args=tuple(zip(params, (e[v] for _, e in b.args)))) for v in range(calls)]
    return Program(name=name, input_seed=rng.randrange(2**31), bases=tuple(b.bases), args=variants[0].args,
                   stmts=tuple(b.stmts), returns=tuple(dict.fromkeys(b.returns)), kind="nograd",
                   dtypes=tuple(b.dtypes), variants=tuple(variants[1:]), base_grad=tuple(b.base_grad),
                   loss_reads_args=rng.random() < 0.3, tags=(("moves", ",".join(b.moves)),))


def _copy(b: _Builder, h: str, x: str, y: str | None, i: int, leafy: bool) -> None:
    """A copy of a tensor's own values from another gradient (Note [memory shared with another gradient])."""
    rng = b.rng
    dst = h
    if leafy and rng.random() < 0.6:  # a leaf is written in grad mode nowhere in eager: the probe's h = a * 2
        dst = b.tmp()
        b.add(f"{dst} = {h} * 2", target=dst, reads=(h,))
        b.floats.append(dst)
    src = x if dst == h and rng.random() < 0.5 else None
    whole = rng.random() < 0.25
    if src is None:  # a view of dst's own memory the body takes
        src = b.tmp()
        part = "" if whole else f"[{i}]"
        spelling = rng.choice(("detach", "no_grad", "no_grad", "view"))
        if spelling == "detach":
            b.add(f"{src} = {dst}.detach(){part}", target=src, view_of=dst)
        elif spelling == "no_grad":
            b.add(f"with torch.no_grad(): {src} = {dst}{part or '[:]'}", target=src, view_of=dst)
        else:
            b.add(f"{src} = {dst}{part or '[:]'}", target=src, view_of=dst)
    elif whole and y is not None:
        src = y
    else:
        whole = False
    if whole:
        code = rng.choice((f"{dst}.copy_({src})", f"{dst}[:] = {src}"))
    else:
        code = rng.choice((f"{dst}[{i}].copy_({src})", f"{dst}[{i}] = {src}"))
    if rng.random() < 0.2:
        code = f"with torch.no_grad(): {code}"
    b.add(code, reads=(src,), writes=dst)
    if rng.random() < 0.5:
        b.returns.append(dst)


def _write(b: _Builder, h: str, x: str, y: str | None, r: int) -> None:
    """A write under no_grad through the host, a row of it, or an argument."""
    rng = b.rng
    target = rng.choice([h, f"{h}[{rng.randrange(r)}]", x, x] + ([y] if y else []))
    root = target.split("[")[0]
    b.add(f"with torch.no_grad(): {target}.{rng.choice(_OPS)}", reads=(root,), writes=root)


def _view_then_write(b: _Builder, h: str, x: str, r: int) -> str:
    """A view taken before a no_grad write and read after it; returns the view."""
    rng = b.rng
    v = b.tmp()
    j = rng.randrange(r)
    of, e = rng.choice(((h, f"{h}[{j}]"), (h, f"{h}[:2]"), (h, f"{h}.t()"), (h, f"{h}.view(-1)"), (x, f"{x}[1:]")))
    b.add(f"{v} = {e}", target=v, view_of=of)
    target = rng.choice((h, h, x, f"{h}[{rng.randrange(r)}]", v))
    root = target.split("[")[0]
    b.add(f"with torch.no_grad(): {target}.{rng.choice(_OPS)}", reads=(root,), writes=root)
    return v


def _index_fill(b: _Builder, calls: int) -> None:
    """``index_fill_`` of an int64 tensor with an index of its own memory in some calls (eager raises there)."""
    rng = b.rng
    if any(p == "k" for p, _ in b.args):
        return
    kb = b.base((3, 9), "none", "int64")  # values -8..8: an index of a dimension of 9 either way
    b.args.append(("k", [kb] * calls))
    form = rng.randrange(3)
    if form == 0:  # an index argument: other memory, k's apart, k's overlapping
        jb = b.base((3,), "none", "int64")
        order = rng.sample((jb, f"{kb}[2, :3]", f"{kb}[1, 3:6]"), 3)
        b.args.append(("j", [order[v % 3] for v in range(calls)]))
        code, reads = f"k[:2].index_fill_(1, j, {rng.choice((-1, 0, 7))})", ("k", "j")
    elif form == 1:  # apart
        code, reads = f"k[:2].index_fill_(1, k[2, :3], {rng.choice((-1, 0, 7))})", ("k",)
    else:  # overlapping: eager raises
        code, reads = rng.choice(("k.index_fill_(1, k[2, :3], -1)", "k[1].index_fill_(0, k[1, :3], -1)")), ("k",)
    b.add(code, reads=reads, writes="k")
    if rng.random() < 0.5:
        t = b.tmp()
        b.add(f"{t} = k * 2", target=t, reads=("k",))
        b.returns.append(t)


_NO_GRAD = "with torch.no_grad(): "


def _ill_defined(s: Stmt, env: dict) -> bool:
    """Whether an in-place statement reads an operand overlapping what it writes at other indices (Note [partial
    overlap within one op]), its destination taken as written (``h[1].copy_(x)`` writes ``h[1]``, not ``h``).
    ``index_fill_``'s index is left to eager, which checks it."""
    code = s.code.removeprefix(_NO_GRAD)
    if s.writes is None or code.startswith(f"{s.target} = "):
        return False
    if m := re.fullmatch(r"(.+?)\.(\w+_)\((.*)\)", code):
        if m.group(2) == "index_fill_":
            return False
        dst, operands = m.group(1), [a.strip() for a in m.group(3).split(",") if a.strip()]
    else:
        dst, src = code.split(" = ", 1)
        operands = [src]
    try:
        dst = eval(dst, dict(_EXEC_GLOBALS), env)
        values = [eval(o, dict(_EXEC_GLOBALS), env) for o in operands]
    except Exception:  # noqa: BLE001 - eager raises on it: a defined outcome
        return False
    return any(isinstance(t, torch.Tensor) and _overlaps(dst, t) and not _same_layout(dst, t) for t in values)


def _defined(p: Program) -> bool:
    """Eager's answer of every call is defined: no statement reads an operand overlapping what it writes at
    other indices (statements after one eager rejects are not run)."""
    for v in range(len(p.all_variants)):
        env = eager_env(p, v)
        for s in p.stmts:
            if _ill_defined(s, env):
                return False
            try:
                _exec_stmt(s, env)
            except Exception:  # noqa: BLE001 - eager rejects this call: the jitted one must too
                break
    return True


def nograd_program(name: str, rng: random.Random, grad: bool = False) -> Program:
    """A program of Note [memory shared with another gradient], checked against eager with ``grad``."""
    fallback = None
    for _ in range(30):
        p = _draw(name, rng)
        if not _defined(p):
            continue
        status, _ = run_program(p.replace(grad=grad), SCHEDULES[0], system="eager")
        if status == "ok" or (status == "both-raised" and rng.random() < 0.2):
            return p
        fallback = fallback or p
    if fallback is None:
        raise RuntimeError(f"fuzz: no defined nograd program for {name}")
    return fallback
