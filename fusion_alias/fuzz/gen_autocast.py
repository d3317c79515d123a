"""The autocast generator: the basic generator's statements and products, some under ``torch.autocast``.

Note [statements under autocast]
    Session 24 found ``torch.mm`` under ``torch.autocast("cpu", dtype=torch.bfloat16)`` returning float32 where
    eager returns bfloat16, silently (Thunder 0.2.6 autocasts only ``matmul``, ``linear``, the convolutions
    and ``scaled_dot_product_attention``; autocast_dtypes.py now refuses the others). No generator made a
    statement under autocast. This one draws the basic generator's inputs (float32 bases that share memory)
    and statements (views, in-place and out-of-place ops), adds products and reductions of 2-D tensors, and
    spells about half of the statements under a bfloat16 autocast on one line::

        with torch.autocast("cpu", dtype=torch.bfloat16): t3 = a @ b.mT       # bfloat16, as eager (runs)
        with torch.autocast("cpu", dtype=torch.bfloat16): a.add_(t3)          # float32 a += bfloat16 t3
        with torch.autocast("cpu", dtype=torch.bfloat16): t4 = torch.mm(a, a.t())   # refused by name
        t5 = torch.prod(t3)                                                   # outside: bfloat16 both

    so bfloat16 values flow into writes of memory the inputs share, and the jitted call must give eager's
    values and dtypes or refuse. Drawn only when asked for (``--generator autocast``): the default streams
    stay as they were.
"""

from __future__ import annotations

import dataclasses

from fusion_alias.fuzz.gen_basic import _Gen
from fusion_alias.fuzz.program import Stmt

AUTOCAST = 'with torch.autocast("cpu", dtype=torch.bfloat16): '


class AutocastGen(_Gen):
    """The basic generator's statements and ``product``s, about half spelled under ``AUTOCAST``."""

    def statement(self) -> Stmt:
        rng = self.rng
        s = self.product() if rng.random() < 0.3 else None
        if s is None:
            s = super().statement()
        if rng.random() < 0.5 and not s.code.startswith("with "):
            s = dataclasses.replace(s, code=AUTOCAST + s.code)
        return s

    def product(self) -> Stmt | None:
        """A product or reduction of 2-D tensors (None: no 2-D tensor yet)."""
        rng = self.rng
        two_d = [v for v in self.names if self.env[v].dim() == 2 and self.env[v].dtype.is_floating_point]
        if not two_d:
            return None
        x = rng.choice(two_d)
        same = [v for v in two_d if self.shape(v) == self.shape(x) and self.env[v].dtype == self.env[x].dtype]
        y = rng.choice(same)
        kind = rng.choice(("matmul", "at", "linear", "mm", "bmm", "addmm", "softmax", "prod", "mse", "einsum"))
        e = {
            "matmul": f"torch.matmul({x}, {y}.mT)",
            "at": f"{x} @ {y}.mT",
            "linear": f"torch.nn.functional.linear({x}, {y})",
            "mm": f"torch.mm({x}, {y}.t())",
            "bmm": f"torch.bmm({x}[None], {y}.mT[None])[0]",
            "addmm": f"torch.addmm({x} @ {y}.mT, {x}, {y}.t())",
            "softmax": f"torch.softmax({x}, -1)",
            "prod": f"torch.prod({x} * 0.5 + 1)",
            "mse": f"torch.nn.functional.mse_loss({x}, {y})",
            "einsum": f'torch.einsum("ij,kj->ik", {x}, {y})',
        }[kind]
        t = self.fresh()
        return Stmt(f"{t} = {e}", target=t, reads=tuple(dict.fromkeys((x, y))))

