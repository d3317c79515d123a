"""The train generator: the ways a training loop calls a jitted function (hostile probes 2026-12-02).

Note [training calls in the fuzzer]
    The ``--grad`` oracle (Note [gradients in the fuzzer]) calls a program under grad
    mode on inputs that are ``leaf * 1`` and back-propagates its outputs. Training code
    calls functions in four more ways, each of which lost a write or a gradient once
    (commits ed7320d, 1bb1a10); each is a class of this generator, with the oracle flags
    of Note [training calls in the fuzzer] (oracle.py) it needs:

    ``no_grad``      the call runs under ``torch.no_grad()`` and an input requires grad (a
                     parameter ``p`` passed as the leaf itself): chained writes
                     ``m.mul_(2).add_(1)``, writes through views ``c[0].copy_(v); c[1].copy_(v * 2)``,
                     an optimizer step ``buf.mul_(0.9).add_(g); p.sub_(buf, alpha=0.1)``, a write
                     through ``h.diagonal()``. Outputs, mutated inputs and the outputs'
                     ``requires_grad`` must be eager's (Thunder's autograd forward once wrote
                     back the ``mul`` of the chain only: ``m`` ended [2, 2], not [3, 3]).
    ``diagonal``     a write through ``h.diagonal()``, ``h.diagonal(1)``, ``h.t().diagonal()``
                     of an intermediate or of a non-leaf input, in a call that computes
                     gradients: fusion_alias must refuse it (an AliasInputError that says "not
                     supported"; counted as refused), never return another value (Thunder's
                     diagonal is a gather: the write landed in a copy). A quarter of these
                     programs have no input that requires grad: they must run and match eager.
    ``grad_no_grad`` a write under grad mode, then one under ``with torch.no_grad():`` into the
                     same tensor (``a.mul_(b)`` then ``a.add_(1.0)``; ``cache[:, 0] = k * 2``
                     then ``cache.mul_(0.5)``), with the loss reading the written argument
                     after the call (``LOSS_READS_ARGS``): the leaves' gradients must be
                     eager's (the write-back once ran under no_grad and dropped mul's history).
    ``running_stat`` a buffer that does not require grad updated with a detached value
                     (``buf.mul_(0.9).add_(x.detach().mean(0))``) and kept from one call to the
                     next (``CARRIED``), backward every call: the buffer must not require grad
                     after the call (``CHECK_REQUIRES_GRAD``) and the next call's backward
                     must run (it raised "backward through the graph a second time").

    Every class checks ``requires_grad`` after the call. The programs are built whole from
    these templates with random shapes, constants, spellings, grad kinds of the inputs
    (``Program.base_grad``) and neighbour statements, not grown statement by statement: an
    eager run (``_valid``) drops the rare draw eager rejects. Without ``--grad`` the same
    programs run with no input that requires grad, and must all match eager. The generator
    is drawn among the others only with ``--grad`` (generator.py).
"""

from __future__ import annotations

import random

import torch

from fusion_alias.fuzz.program import Program, StatementBuilder

CLASSES = ("no_grad", "diagonal", "grad_no_grad", "running_stat")
_CLASS_WEIGHTS = (3, 2, 3, 2)
_CONSTS = (2.0, 0.5, -1.5, 0.25, 3.0)


class _Builder(StatementBuilder):
    """Bases, arguments (one base each), statements and returns of one program."""

    def __init__(self, rng: random.Random):
        super().__init__(rng)
        self.bases: list[tuple[str, tuple[int, ...]]] = []
        self.args: list[tuple[str, str]] = []
        self.base_grad: list[tuple[str, str]] = []
        self.carried: list[str] = []
        self.returns: list[str] = []

    def arg(self, name: str, shape: tuple[int, ...], how: str = "nonleaf", carried: bool = False) -> str:
        base = f"x{len(self.bases)}"
        self.bases.append((base, shape))
        self.args.append((name, base))
        if how != "nonleaf":
            self.base_grad.append((base, how))
        if carried:
            self.carried.append(base)
        return name

    def value(self, expr: str, reads: tuple[str, ...]) -> str:
        t = self.tmp()
        self.add(f"{t} = {expr}", target=t, reads=reads)
        return t

    def c(self) -> float:
        return self.rng.choice(_CONSTS)


def _no_grad(b: _Builder) -> dict:
    rng = b.rng
    n = rng.choice((2, 3, 4))
    p = b.arg("p", (n,), "leaf")
    moves = rng.sample(("chain", "rows", "step", "diag"), rng.randint(1, 3))
    if moves == ["diag"]:
        moves.insert(0, rng.choice(("chain", "rows", "step")))
    for move in moves:
        if move == "chain":
            m = b.arg("m", (n,), rng.choice(("none", "none", "nonleaf", "leaf")))
            form = rng.randrange(3)
            if form == 0:  # m.mul_(2).add_(1)
                b.add(f"{m}.mul_({b.c()}).add_({b.c()})", reads=(m,), writes=m)
            elif form == 1:  # the method on the result
                t = b.tmp()
                b.add(f"{t} = {m}.mul_({b.c()})", target=t, reads=(m,), writes=m, inplace_result=True)
                b.add(f"{t}.add_({b.c()})", reads=(t,), writes=t)
            else:  # an operand that requires grad
                b.add(f"{m}.add_({b.c()}).mul_({p})", reads=(m, p), writes=m)
            b.returns.append(m)
        elif move == "rows":
            r = rng.choice((2, 3))
            c = b.arg("c", (r, n), rng.choice(("none", "none", "nonleaf")))
            v = b.arg("v", (n,), rng.choice(("none", "nonleaf", "leaf")))
            i, j = rng.sample(range(r), 2)
            b.add(f"{c}[{i}].copy_({v})", reads=(v,), writes=c)
            code, reads = rng.choice(((f"{c}[{j}].copy_({v} * {b.c()})", (v,)), (f"{c}[{j}].add_({p})", (p,)),
                                      (f"{c}[{j}].mul_({v})", (v,))))
            b.add(code, reads=reads, writes=c)
            b.returns.append(c)
        elif move == "step":  # an optimizer step: momentum buffer, then the parameter
            buf = b.arg("buf", (n,), "none")
            g = b.arg("g", (n,), rng.choice(("none", "nonleaf")))
            if rng.random() < 0.3:
                b.add(f"{p}.mul_(0.99)", reads=(p,), writes=p)  # weight decay
            b.add(f"{buf}.mul_(0.9).add_({g})", reads=(buf, g), writes=buf)
            b.add(rng.choice((f"{p}.sub_({buf}, alpha=0.1)", f"{p}.add_({buf}, alpha=-0.05)")),
                  reads=(p, buf), writes=p)
            b.returns.append(buf)
        else:  # diag: without gradients, a write through diagonal must match eager
            h = b.arg("h", (n, n), rng.choice(("none", "nonleaf", "leaf")))
            b.add(rng.choice((f"{h}.diagonal().mul_({b.c()})", f"{h}.diagonal(1).add_(1.0)",
                              f"{h}.t().diagonal().copy_({p})", f"{h}.diagonal().add_({p})")),
                  reads=(h, p), writes=h)
            b.returns.append(h)
    b.returns.insert(0, b.value(rng.choice((f"{p} * 1", f"{p}.sum()", f"{p} * 2")), (p,)))
    if rng.random() < 0.3:
        b.returns.append(p)  # an output that requires grad under no_grad too
    rng.shuffle(b.returns)
    return dict(no_grad_call=True)


def _diagonal(b: _Builder) -> dict:
    rng = b.rng
    n = rng.choice((3, 4))
    plain = rng.random() < 0.25  # no input requires grad: must run, and match eager
    a = b.arg("a", (n, n), "none" if plain else "nonleaf")
    v = b.arg("v", (n,), "none" if plain else rng.choice(("nonleaf", "none")))
    if rng.random() < 0.6:  # an intermediate
        h = b.value(rng.choice((f"{a} * 1", f"{a} + 0.5", f"{a}.tanh()", f"{a}.clone()")), (a,))
    else:  # the non-leaf input itself
        h = a
    view = rng.choice(("diagonal()", "diagonal()", "diagonal(1)", "diagonal(-1)", "t().diagonal()"))
    full = view in ("diagonal()", "t().diagonal()")
    op = rng.choice((f"mul_({v})", f"add_({v})", f"copy_({v} * 2)", f"sub_({v})") if full
                    else (f"add_({b.c()})", f"mul_({b.c()})"))
    if rng.random() < 0.3:  # the view on its own line
        d = b.tmp()
        b.add(f"{d} = {h}.{view}", target=d, view_of=h)
        b.add(f"{d}.{op}", reads=(d, v) if full else (d,), writes=d)
    else:
        b.add(f"{h}.{view}.{op}", reads=(h, v) if full else (h,), writes=h)
    b.returns.append(h)
    if rng.random() < 0.5:
        b.returns.append(b.value(rng.choice((f"{h}.sum(0)", f"{h} * {v}", f"{h}.exp()")), (h, v)))
    return {}


def _grad_no_grad(b: _Builder) -> dict:
    rng = b.rng
    if rng.random() < 0.6:  # a.mul_(b); with torch.no_grad(): a.add_(1.0)
        n = rng.choice((2, 3, 4))
        shape = rng.choice(((n,), (2, n)))
        a = b.arg("a", shape, "nonleaf")
        w = b.arg("b", rng.choice((shape, (n,))), rng.choice(("nonleaf", "nonleaf", "leaf")))
        b.add(rng.choice((f"{a}.mul_({w})", f"{a}.add_({w})", f"{a}.sub_({w} * 0.5)", f"{a}.mul_({w}.tanh())")),
              reads=(a, w), writes=a)
        if rng.random() < 0.3:
            b.returns.append(b.value(f"{a} * 2", (a,)))  # read between the writes
        b.add(rng.choice(("with torch.no_grad(): {a}.add_(1.0)", "with torch.no_grad(): {a}.mul_(0.5)",
                          "with torch.no_grad(): {a}.sub_({w})", "with torch.no_grad(): {a}.div_(2.0)")).format(a=a, w=w),
              reads=(a, w), writes=a)
        if rng.random() < 0.3:  # under grad mode again
            b.add(rng.choice((f"{a}.mul_(2.0)", f"{a}.add_({w})")), reads=(a, w), writes=a)
        b.returns.append(b.value(rng.choice((f"{w} * 1", f"{w}.exp()", f"{a} * {w}")), (a, w)))
    else:  # cache[:, 0] = k * 2; with torch.no_grad(): cache.mul_(0.5)
        t, n = rng.choice((3, 4)), rng.choice((2, 3))
        cache = b.arg("cache", (t, n), rng.choice(("nonleaf", "none")))
        k = b.arg("k", (t,), "nonleaf")
        j = rng.randrange(n)
        b.add(rng.choice((f"{cache}[:, {j}] = {k} * 2", f"{cache}[:, {j}].copy_({k}.tanh())",
                          f"{cache}[:, {j}] = {k}")), reads=(k,), writes=cache)
        j2 = rng.randrange(n)
        b.add(rng.choice((f"with torch.no_grad(): {cache}.mul_(0.5)", f"with torch.no_grad(): {cache}.add_(0.25)",
                          f"with torch.no_grad(): {cache}[:, {j2}].add_(1.0)")), reads=(cache,), writes=cache)
        b.returns.append(b.value(rng.choice((f"{k} * 1", f"{cache}.sum(1)", f"{k}.exp()")), (k, cache)))
    return dict(loss_reads_args=True)


def _running_stat(b: _Builder) -> dict:
    rng = b.rng
    n, batch = rng.choice((3, 4)), rng.choice((2, 3))
    x = b.arg("x", (batch, n), "nonleaf")
    buf = b.arg("buf", (n,), "none", carried=True)
    b.add(rng.choice((f"{buf}.mul_(0.9).add_({x}.detach().mean(0))",
                      f"{buf}.mul_(0.9).add_({x}.detach().mean(0), alpha=0.1)",
                      f"{buf}.add_({x}.detach().sum(0))",
                      f"{buf}.mul_(0.5).add_({x}.mean(0).detach())")), reads=(buf, x), writes=buf)
    if rng.random() < 0.3:
        sq = b.arg("sq", (n,), "none", carried=True)
        b.add(f"{sq}.mul_(0.9).add_({x}.detach().pow(2).mean(0), alpha=0.1)", reads=(sq, x), writes=sq)
    b.returns.append(b.value(rng.choice((f"{x} * 2", f"{x} - {buf}", f"({x} - {buf}) * 2", f"{x}.tanh()")), (x, buf)))
    if rng.random() < 0.3:
        b.returns.append(buf)
    return {}


_CLASS_MAKERS = {"no_grad": _no_grad, "diagonal": _diagonal, "grad_no_grad": _grad_no_grad,
                 "running_stat": _running_stat}


def train_program(name: str, rng: random.Random, cls: str | None = None) -> Program:
    """A program of one class of Note [training calls in the fuzzer] (``cls``, or drawn)."""
    for _ in range(20):
        b = _Builder(rng)
        kind = cls or rng.choices(CLASSES, _CLASS_WEIGHTS)[0]
        flags = _CLASS_MAKERS[kind](b)
        p = Program(name=name, input_seed=rng.randrange(2**31), bases=tuple(b.bases), args=tuple(b.args),
                    stmts=tuple(b.stmts), returns=tuple(dict.fromkeys(b.returns)), kind="train",
                    base_grad=tuple(b.base_grad), carried=tuple(b.carried), check_requires_grad=True, **flags)
        if _valid(p):
            return p
    raise RuntimeError(f"fuzz: no valid train program for {name}")


def train_class(p: Program) -> str:
    """The class of a ``train`` program (from its flags and code)."""
    code = "\n".join(s.code for s in p.stmts)
    if p.no_grad_call:
        return "no_grad"
    if p.loss_reads_args:
        return "grad_no_grad"
    if p.carried:
        return "running_stat"
    return "diagonal" if ".diagonal(" in code else "?"


def _valid(p: Program) -> bool:
    """Eager runs the program (without gradients) on its inputs."""
    from fusion_alias.fuzz.hazard import _exec_stmt, eager_env

    env = eager_env(p)
    try:
        for s in p.stmts:
            _exec_stmt(s, env)
    except Exception:  # noqa: BLE001
        return False
    return all(isinstance(env.get(r), torch.Tensor) for r in p.returns)
