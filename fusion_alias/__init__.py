"""fusion_alias: an alias-aware fusion executor for Lightning Thunder.

In-place ops on tensors that share memory, fused without hazards:

>>> import torch, fusion_alias
>>> def f(a, b):
...     return a.exp_() * b.tanh_()
>>> x = torch.randn(5, 5)
>>> out = fusion_alias.jit(f)(x, x[0, 0])   # right, in 3 regions

See DESIGN.md in the shared folder for the hazard model.
"""

from fusion_alias.executor import AliasInputError, executor
from fusion_alias.api import explain, jit, regions
from fusion_alias.overlap import may_overlap


def dynamo_backend(**options):
    """A torch.compile backend: ``torch.compile(fn, backend=fusion_alias.dynamo_backend())``
    (``fusion_alias.dynamo``; options as for ``fusion_alias.jit``)."""
    from fusion_alias.dynamo import dynamo_backend as make

    return make(**options)


__all__ = ["jit", "executor", "explain", "regions", "may_overlap", "AliasInputError", "dynamo_backend"]
__version__ = "0.1.0"
