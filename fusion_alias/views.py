"""View replay: apply a chain of traced view ops to a real tensor with torch.

A neutral home for the one piece of view knowledge that the analysis (the
refusals replay a destination's view chain on the real input to ask torch
about overlap), the lowering (a region's view outputs are replayed after the
fusion ran) and the backends all share. It depends on ``ops`` only, so none
of them has to import another to get it.
"""

from __future__ import annotations

import torch


def replay_view(t: torch.Tensor, steps) -> torch.Tensor:
    """Apply view prims to a real tensor with torch (metadata only)."""
    from fusion_alias.ops import op_info

    for b in steps:
        t = op_info(b).torch_fn(t, *b.args[1:], **b.kwargs)
    return t
