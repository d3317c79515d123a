"""The fresh generator: in-place ops whose operand is the fresh result of an op Thunder keeps whole.

Note [an operand that is always new memory]
    ``norm``, ``cumsum``, ``roll``, ``cumprod``, ``median``, ... always return a
    new tensor, but in Thunder's trace several of them are leaf symbols that
    fusion_alias's op table does not describe. An in-place op that reads such a
    result while writing the tensor it was computed from is well defined (the
    operand is computed in full before the write):

        x.div_(x.norm())             # x / ||x||
        x.add_(x.cumsum(0))
        x.add_(x.roll(1, 0))         # reads the old rows, not the ones just written
        x.div_(row.norm())           # row = x[0] passed as a second argument

    fusion_alias once refused these ("may share memory through an op whose result
    fusion_alias cannot relate to its input"); they must run and match eager. So a
    regression shows in the summary either way: a wrong value as a mismatch, a
    needless refusal as a refusal of a ``fresh`` program (``refused`` in the
    summary's per-generator counts: every program of this generator is one eager
    defines and fusion_alias should accept, without ``--grad``).

Note [random draws in the fuzzer]
    A draw takes the next numbers of torch's one generator, so the order of two draws is part of the
    result: fusion_alias placed a draw that follows no region before one that does, and two dropouts
    swapped their masks (random_draws.py, Note [random draws in program order]). ``fresh_value``
    sometimes multiplies or offsets its value by a draw: ``rand``/``randn`` of a shape (a draw that
    follows no region) or ``bernoulli`` of a value computed from it (one that follows the region
    computing it). Each draws into a row-major tensor: eager draws ``rand_like(x)``, ``bernoulli(p)``
    and ``F.dropout(x)`` in the memory order of ``x`` or ``p``, Thunder in row-major order, so for a
    transposed ``x`` the same numbers land at other indices (70001 #22; docs/limits.md). With an input
    that requires grad these take the same numbers in eager and in Thunder, where ``F.dropout`` does
    not (docs/limits.md). They are drawn from a stream of its own, and so is a line ``draw_value``
    adds (15% of the statements), so every seed keeps its statements (the names of later temporaries
    may shift); the oracle seeds torch's generator before each call of either side
    (``torch.manual_seed(0)``), so both take the same numbers when in the same order.

Inputs: one base ``x0``; ``a`` is ``x0``; often ``b`` aliases it (a row, a
column, a transpose, the same tensor, its flat view), sometimes ``c`` is an
independent base of the same shape. Ops the op table does describe (``flip``,
``sort``, ``softmax``) are mixed in as controls.
"""

from __future__ import annotations

import random

import torch

from fusion_alias.fuzz.gen_basic import _Gen
from fusion_alias.fuzz.hazard import _overlaps
from fusion_alias.fuzz.program import PARAM_NAMES, Stmt

_SHAPES = ((4, 4), (4, 4), (4, 6), (6,), (2, 3, 4))


def fresh_inputs(rng: random.Random) -> dict:
    shape = rng.choice(_SHAPES)
    nd = len(shape)
    bases = [("x0", shape)]
    exprs = ["x0"]
    if rng.random() < 0.7:
        options = ["x0[0]", "x0[1:]", "x0", "x0.view(-1)"]
        if nd >= 2:
            options += ["x0[:, 1]", "x0[0]"]
        if nd == 2 and shape[0] == shape[1]:
            options += ["x0.t()"]
        exprs.append(rng.choice(options))
    if rng.random() < 0.25:
        bases.append(("x1", shape))
        exprs.append("x1")
    return {"bases": tuple(bases), "args": tuple(zip(PARAM_NAMES, exprs))}


def _fresh_ops(v: str, nd: int, rng: random.Random) -> list[tuple[str, bool]]:
    """(expression, positive scalar) of ops over ``v`` whose result is new memory."""
    d = rng.randrange(-nd, nd) if nd else 0
    ops = [(f"{v}.norm()", True), (f"torch.linalg.vector_norm({v})", True)]
    if nd:
        ops += [(f"{v}.cumsum({d})", False), (f"{v}.roll(1, {d})", False), (f"{v}.roll({rng.choice((1, 2, -1))})", False),
                (f"{v}.cumprod({d})", False), (f"{v}.logcumsumexp({d})", False), (f"{v}.cummax({d})[0]", False),
                (f"{v}.median()", False), (f"{v}.norm(dim={d}, keepdim=True)", True),
                # controls: ops the op table describes
                (f"{v}.flip({d})", False), (f"{v}.sort({d})[0]", False), (f"{v}.softmax({d})", False)]
    if nd == 2:
        ops += [(f"{v}.renorm(2, 0, 1.0)", False), (f"{v}.trace()", False)]
    return ops


class FreshGen(_Gen):
    """In-place ops reading a fresh result of (often) the tensor they write, among views and reads."""

    def __init__(self, rng: random.Random, env: dict, names: list[str]):
        super().__init__(rng, env, names)
        self.scatter_spell = random.Random(str(rng.getstate()[1][:16]) + ":scatter")  # Note [scatter spellings keep the stream]
        self.draw_spell = random.Random(str(rng.getstate()[1][:16]) + ":draw")  # Note [random draws in the fuzzer]

    def scatter_spelling(self, e: str, src: str, out_shape: tuple) -> str:
        """Note [scatter spellings keep the stream]: a fresh operand of ``src``'s own shape, sometimes
        spelled as a functional scatter of it into ``src`` (``torch.select_scatter(x, (x.cumsum(0))[0], 0,
        0)``, ``slice_scatter``, ``diagonal_scatter``, ``diag_embed``): new memory too, which fusion_alias
        refused as an operand it could not relate to ``x`` until session 19. Drawn from a stream of its
        own, for operands that are not positive scalars (the ops drawn do not depend on it), keeping the
        shape: every seed's programs are the ones they were, some operands spelled otherwise."""
        shape = tuple(self.env[src].shape)
        if not shape or out_shape != shape or self.scatter_spell.random() >= 0.3:
            return e
        forms = [f"torch.select_scatter({src}, ({e})[0], 0, 0)", f"torch.slice_scatter({src}, ({e})[:1], 0, 0, 1)"]
        if len(shape) == 2:
            forms.append(f"torch.diagonal_scatter({src}, ({e}).diagonal(), 0)")
            if shape[0] == shape[1]:
                forms.append(f"torch.diag_embed(({e})[0])")
        return self.scatter_spell.choice(forms)

    def fresh_write(self) -> Stmt:
        rng = self.rng
        dst = self.pick(writable=True)
        shape = self.shape(dst)
        aliased = [v for v in self.names if v != dst and _overlaps(self.env[v], self.env[dst])]
        r = rng.random()
        if r < 0.5 or (r < 0.8 and not aliased):
            src = dst  # x.div_(x.norm())
        elif r < 0.8:
            src = rng.choice(aliased)  # x.div_(row.norm()), row = x[0]
        else:
            src = rng.choice(self.names)
        candidates = []
        for e, positive in _fresh_ops(src, self.env[src].dim(), rng):
            try:
                out = eval(e, {"torch": torch}, {src: self.env[src]})
                fits = tuple(torch.broadcast_shapes(tuple(out.shape), shape)) == shape
            except Exception:  # noqa: BLE001
                continue
            if fits:
                candidates.append((e, positive, tuple(out.shape)))
        if not candidates:
            return self.inplace()
        e, positive, out_shape = rng.choice(candidates)
        if not positive:
            e = self.scatter_spelling(e, src, out_shape)
        ops = ["add_", "sub_", "mul_", "add_alpha"] + (["div_", "div_"] if positive else [])
        if out_shape == shape:
            ops += ["copy_", "setitem"] if shape else ["copy_"]
        elif len(out_shape) <= len(shape) and all(o in (1, s) for o, s in zip(out_shape[::-1], shape[::-1])):
            ops.append("copy_")  # a broadcasting copy_ (fusion_alias/inplace_lookasides.py)
        op = rng.choice(ops)
        if op == "add_alpha":
            code = f"{dst}.add_({e}, alpha=0.5)"
        elif op == "setitem":
            i, j = rng.randrange(shape[0]), rng.randrange(shape[0])
            code = f"{dst}[{i}] = ({e})[{j}]"
        else:
            code = f"{dst}.{op}({e})"
        # the operand is new memory computed before the write: ``src`` is read, not an operand that
        # overlaps the destination (which _ill_defined would drop)
        reads = (() if op == "setitem" else (dst,)) + (() if _overlaps(self.env[src], self.env[dst]) else (src,))
        return Stmt(code, reads=reads, writes=dst)

    def fresh_value(self) -> Stmt:
        """``t = x.cumsum(0)`` on its own line: a later in-place op may read it as an operand."""
        x = self.pick()
        e, _ = self.rng.choice(_fresh_ops(x, self.env[x].dim(), self.rng))
        if self.draw_spell.random() < 0.35:  # Note [random draws in the fuzzer]
            e = self.draw_spell.choice((f"({e}) * (torch.rand(()) + 0.5)", f"({e}) + torch.randn(())",
                                        f"({e}) * torch.bernoulli(torch.sigmoid(({e}).sum()))"))
        t = self.fresh()
        return Stmt(f"{t} = {e}", target=t, reads=(x,))

    def draw_value(self) -> Stmt:
        """``t = x * (torch.rand(<x's shape>) + 0.5)`` and kin on a line of their own (Note [random draws in the
        fuzzer]): row-major draws of a shape, or ``bernoulli`` of a value computed from ``x``."""
        spell = self.draw_spell
        x = spell.choice([v for v in self.names if self.env[v].is_floating_point()] or self.names)
        shape = tuple(self.env[x].shape)  # (a draw of x's own layout takes other numbers: module Note)
        flat = f"torch.bernoulli(torch.sigmoid({x} * 2).reshape(-1)).reshape({shape})"
        e = spell.choice((f"{x} * (torch.rand({shape}) + 0.5)", f"torch.randn({shape}) + {x}", f"{flat} * {x}",
                          f"torch.bernoulli(torch.sigmoid({x}.exp()).reshape(-1))"))
        t = self.fresh()
        return Stmt(f"{t} = {e}", target=t, reads=(x,))

    def statement(self) -> Stmt:
        if self.draw_spell.random() < 0.15:  # (its own stream: the statements of self.rng stay)
            return self.draw_value()
        kind = self.rng.choices(("fresh_write", "fresh_value", "view", "inplace", "outofplace"), (6, 1, 2, 1, 2))[0]
        return getattr(self, kind)()
