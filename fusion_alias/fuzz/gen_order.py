"""The order generator: in-place ops whose operand overlaps the written tensor at other indices, in
layouts the program made (``--generator order``, drawn only when asked for).

Note [programs whose eager answer depends on memory order]
    Every other generator drops a statement whose operand overlaps its destination at
    other indices (Note [partial overlap within one op], hazard.py): eager's answer there
    is its kernel's visiting order. But such statements are exactly where fusion_alias
    must not follow its own order: it refuses them (Note [overlaps eager does not
    check], refusals/operands.py), or eager rejects them itself. Eager CPU is
    deterministic, so the oracle stays exact: the jitted call must raise where eager
    raises, and where eager runs it must refuse with a clear error or return eager's
    value, never another one. A refusal that says "eager PyTorch rejects this too" of a
    call eager ran is a false claim, a failure (Note [what a raise of the jitted call
    counts as], driver.py).

    This generator keeps such statements, and writes them into tensors whose layout the
    analysis has to know or guess (Note [a layout the program made], refusals/operands.py)::

        layout source                        examples
        views it replays (neighbours)        a.t(), a.transpose(0, 1), a.mT, a.permute(1, 0),
                                             a.reshape(-1), a.flatten() (a view or a copy)
        views it did not replay (swapaxes,   a.swapaxes(0, 1), a.swapdims(0, 1), a.adjoint(),
        narrow: replayed since session 21)   a.movedim(0, 1), a.narrow(0, 1, 3),
                                             a.as_strided(<the transpose>)
        fresh results that keep a layout     a.t() * 2, -a.t(), a.t().clone(), a.t().exp(),
                                             a.t().contiguous(), a * 2

    then ``w.mul_(w[0:1])``, ``w.add_(w[:, 0:1])``, ``w.sub_(w.t())``, ``w[1:].copy_(w[:-1])``,
    ``w[0] = w[1]`` (ill-defined or rejected, depending on the layout), ``w.masked_scatter_(w > 0, w)``
    (eager checks nothing and reads the source as it writes: Note [masked_scatter_ reads its source as
    it writes], refusals/operands.py), one in five with the operand read through ``w.detach()``, and
    their well-defined neighbours (``w.mul_(w)``,
    ``w[0].add_(w[1])``, ``w[0:2].sub_(w[2:4])``, a ``masked_scatter_`` from rows apart), among plain writes
    through those views and reads of the inputs after them; a final statement eager rejects may be a
    dtype view of such a result (``(a.t() * 2).view(torch.float16)``). Inputs: ``a`` a 4x4 (sometimes
    4x6) base or its transpose, sometimes ``b`` a row, a column or the transpose of the same
    base. One call per program (the body is grown on one aliasing).
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.gen_basic import _Gen
from fusion_alias.fuzz.program import PARAM_NAMES, Stmt

# (expression over v, is a view of v): ``{v}`` is a 2-d tensor of shape (r, c)
_REPLAYED = ("{v}.t()", "{v}.transpose(0, 1)", "{v}.mT", "{v}.permute(1, 0)",
             # a view or a copy, by eager's layout of {v}: Note [a reshape that copies is not a view]
             "{v}.reshape(-1)", "{v}.flatten()")
_NOT_REPLAYED = ("{v}.swapaxes(0, 1)", "{v}.swapdims(0, 1)", "{v}.adjoint()", "{v}.movedim(0, 1)",
                 "{v}.narrow(0, 1, {r1})", "{v}.as_strided(({c}, {r}), ({s1}, {s0}), {o})")
_FRESH = ("{v}.t() * 2", "-{v}.t()", "{v}.t().clone()", "{v}.t().exp()", "{v}.t().contiguous()", "{v} * 2",
          "{v}.swapaxes(0, 1) + 1")


def order_inputs(rng: random.Random) -> dict:
    shape = (4, 4) if rng.random() < 0.75 else (4, 6)
    bases = [("x0", shape)]
    exprs = [rng.choice(("x0", "x0", "x0.t()"))]
    if rng.random() < 0.4:
        exprs.append(rng.choice(("x0[0]", "x0[:, 1]", "x0[1:3]") + (("x0.t()",) if shape[0] == shape[1] else ())))
    return {"bases": tuple(bases), "args": tuple(zip(PARAM_NAMES, exprs))}


class OrderGen(_Gen):
    """Layouts the program makes, and in-place ops whose operand overlaps what they write."""

    keeps_ill_defined = True  # Note [programs whose eager answer depends on memory order]

    def _two_d(self, writable: bool = False) -> str | None:
        names = [v for v in self.names if self.env[v].dim() == 2 and min(self.shape(v)) >= 2]
        if writable:
            names = [v for v in names if 0 not in self.env[v].stride()]
        return self.rng.choice(names) if names else None

    def relayout(self) -> Stmt:
        rng = self.rng
        v = self._two_d()
        if v is None:
            return self.view()
        r, c = self.shape(v)
        s0, s1 = self.env[v].stride()
        kind = rng.choices(("replayed", "not_replayed", "fresh"), (2, 3, 3))[0]
        e = rng.choice({"replayed": _REPLAYED, "not_replayed": _NOT_REPLAYED, "fresh": _FRESH}[kind])
        offset = self.env[v].storage_offset()
        e = e.format(v=v, r=r, c=c, r1=r - 1, s0=s0, s1=s1, o=offset)
        t = self.fresh()
        if kind == "fresh":
            return Stmt(f"{t} = {e}", target=t, reads=(v,))
        return Stmt(f"{t} = {e}", target=t, view_of=v)

    def overlap_write(self) -> Stmt:
        rng = self.rng
        w = self._two_d(writable=True)
        if w is None:
            return self.inplace()
        r, c = self.shape(w)
        # 1 in 5: the operand read through ``.detach()`` (the same memory and layout: ``w.mul_(w.detach()[0:1])``)
        o = f"{w}.detach()" if self.detach_drawn(0.2) else w  # (gen_basic.py, Note [detach spellings keep the stream])
        ops = [f"{w}.mul_({o}[0:1])", f"{w}.add_({o}[:, 0:1])", f"{w}[1:].copy_({o}[:-1])",
               f"{w}[:, 1:].copy_({o}[:, :-1])", f"{w}[0] = {o}[1]", f"{w}.add_({o}[0])",
               f"{w}[0:1].copy_({o}[1:2])", f"{w}.mul_({o}[:, 1:2])",
               # well-defined neighbours: the operand is the destination, or apart from it
               f"{w}.mul_({o})", f"{w}[0].add_({o}[1])", f"{w}[0:2].sub_({o}[2:4])", f"{w}[:, 0].copy_({o}[:, 1])",
               # masked_scatter_: eager checks nothing and reads its source as it writes
               f"{w}.masked_scatter_({w} > 0, {o})", f"{w}[0:2].masked_scatter_({w}[0:2] > 0, {o}[1:3])",
               f"{w}[0:2].masked_scatter_({w}[0:2] > 0, {o}[2:4])"]
        if r == c:
            ops += [f"{w}.sub_({o}.t())", f"{w}.copy_({o}.t())"]
        return Stmt(rng.choice(ops), reads=(w,), writes=w)

    def plain_write(self) -> Stmt:
        rng = self.rng
        w = self._two_d(writable=True) or self.pick(writable=True)
        op = rng.choice(("[0].add_(1.0)", ".mul_(2.0)", "[:, 1].neg_()", "[1:3].zero_()", ".exp_()"))
        if self.env[w].dim() != 2 and op[0] in "[":
            op = ".mul_(2.0)"
        return Stmt(f"{w}{op}", reads=(w,), writes=w)

    def read(self) -> Stmt:
        x = self.pick()
        t = self.fresh()
        e = self.rng.choice((f"{x} * 1", f"{x}.sum(0)", f"{x}.exp()", f"{x} + {x}"))
        return Stmt(f"{t} = {e}", target=t, reads=(x,))

    def bad_inplace(self) -> list[Stmt]:
        """Half the time a dtype view eager rejects for a result's layout (``(v.t() * 2).view(torch.float16)``:
        its last stride is not 1 in eager, a region's result is contiguous), else the basic generator's."""
        v = self._two_d()
        if v is not None and self.rng.random() < 0.5:
            t = self.fresh()
            return [Stmt(f"{t} = ({v}.t() * 2).view(torch.float16)", target=t, reads=(v,))]
        return super().bad_inplace()

    def statement(self) -> Stmt:
        kind = self.rng.choices(("relayout", "overlap_write", "plain_write", "read", "view"), (4, 4, 2, 2, 1))[0]
        return getattr(self, kind)()
