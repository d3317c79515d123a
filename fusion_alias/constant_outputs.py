"""Outputs no gradient reaches, in a call that computes gradients and writes nothing in place.

Note [outputs no gradient reaches, without writes]
--------------------------------------------------
Thunder's autograd Function marks every floating output as requiring grad. Eager does not mark a
result computed under ``torch.no_grad()``, through ``detach()``, or from integer or bool results
alone (``(b < 0).float()``). In programs that write in place the functionalized program gives each
output eager's mark (autograd_functionalize.py, Note [outputs no gradient reaches]); programs that
write nothing kept Thunder's marks, so a loss over "the outputs that require grad" summed one eager
leaves out, and ``.backward()`` of one ran where eager raises (fuzz seeds 26007 #20, modules
``--grad``; 40048 #13, item ``--grad``; the limit since session 16)::

    def forward(self, a):
        with torch.no_grad():
            t1 = a - self.ema          # eager: t1.requires_grad False; was True
        return t1, t1 @ self.w.t()

``returns_constants`` asks, of the computation trace as traced, whether any floating output is one
eager does not mark (``gradient_paths.requires_grad_by_name`` over the trace with its writes and
views made explicit, as ``functionalize`` reads it). Such a program is functionalized too, with no
write to make explicit: the functionalized call's outputs get eager's marks, the rest of it is as
before (no write-backs). Programs whose outputs all require grad stay Thunder's as they were.
"""

from __future__ import annotations

import torch
from thunder.core.proxies import TensorProxy
import thunder.core.dtypes as dtypes

from fusion_alias.aliasing import analyze
from fusion_alias.grad_mode_exit import enables_grad
from fusion_alias.gradient_paths import requires_grad_by_name
from fusion_alias.refusals.inplace_ops import _traced_program


def computes_gradients() -> bool:
    """Whether the call being compiled computes gradients: grad mode is on, or the traced program turns it
    on (api.py, Note [enable_grad inside a call made under no_grad]). A value made in such a block from
    tensors none of which requires grad, returned from a call made under ``no_grad``, came back requiring
    grad (modules fuzz seed 26203 #28; plain ``thunder.jit`` too): the check below was asked only with
    grad mode on."""
    return torch.is_grad_enabled() or enables_grad(_traced_program())


def returns_constants(trace, explicit_writes) -> bool:
    """Whether a floating output of ``trace`` (a computation trace that writes nothing) requires no grad
    in eager (module Note). ``explicit_writes``: ``functionalize``'s flattening of writes and views."""
    tensor_inputs = [a for a in trace.args if isinstance(a, TensorProxy)]
    if not any(p.requires_grad for p in tensor_inputs):
        return False
    *body, ret = trace.bound_symbols
    value = ret.args[0] if ret.args else None
    outs = value["output"] if isinstance(value, dict) else value
    if not isinstance(outs, (tuple, list)):
        return False
    outs = [o for o in outs if isinstance(o, TensorProxy) and dtypes.is_inexact_dtype(o.dtype)]
    if not outs:
        return False
    flat = explicit_writes(body)
    info = analyze(flat, tensor_inputs, [], {}, detach_is_view=True)
    requires = requires_grad_by_name(flat, info, tensor_inputs)
    return not all(requires(o.name) for o in outs)
