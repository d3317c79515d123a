"""A refusal in calls that compute gradients: a complex value that requires grad, through an op whose gradient
Thunder 0.2.6 does not conjugate.

Note [a complex product's gradient conjugates]
----------------------------------------------
PyTorch's gradient of a complex function is the conjugate Wirtinger one: for ``y = a * b`` the gradient that
reaches ``a`` is ``g * conj(b)``. Thunder 0.2.6's rules are the real formulas (``g * b``), so every op whose
derivative is not a real number gives a wrong gradient, silently (plain ``thunder.jit`` too). Worked example,
rotary embeddings as Llama writes them (session 31 probe)::

    qc = torch.view_as_complex(q.reshape(..., -1, 2))     # q requires grad
    out = torch.view_as_real(qc * freqs)                   # freqs = e^{i 0.3}, g = i at element 0
    # eager: q.grad = g * conj(freqs) = 0.2955 + 0.9553i;  Thunder: g * freqs = -0.2955 + 0.9553i

``mul`` and ``div`` take the conjugate in fusion_alias's rules (``eager_gradients.py``), so ``a * b``, ``a / b``,
``addcmul``, ``lerp``, ``square`` and sums of products get eager's gradients. The others (``exp``, ``sin``,
``tanh``, ``sqrt``, ``log``, ``sigmoid``, ``pow``, ``reciprocal``, ``matmul``, ...) of a complex value that
requires grad are refused here, by name; ops whose derivative is real (``add``, ``sub``, ``neg``, sums, views
and copies) run, and so do the ops Thunder runs as torch's own function, with torch's autograd
(``OpTags.AUTO_REGISTERED``: ``torch.fft.rfft``/``irfft``, ``view_as_complex``, ``polar``).
"""

from __future__ import annotations

import thunder.core.dtypes as dtypes
import thunder.core.prims as prims
from thunder.core.proxies import TensorProxy

from fusion_alias.aliasing import _view_names, proxy_args, tensor_outs
from fusion_alias.errors import AliasInputError

# ops whose gradient is right for complex values (a real derivative, or fusion_alias's conjugating rule),
# by the name of the symbol as the user called it
_RIGHT = frozenset({
    "add", "add_", "sub", "sub_", "rsub", "neg", "neg_", "mul", "mul_", "true_divide", "div", "div_",
    "addcmul", "addcmul_", "addcdiv", "addcdiv_", "lerp", "lerp_", "square", "sum", "mean", "where",
    "view_as_real", "view_as_complex", "conj_physical", "conj", "resolve_conj", "clone", "contiguous", "cat", "stack", "copy_",
    "setitem_", "__setitem__", "getitem", "to", "type_as", "zero_", "fill_", "masked_fill", "masked_fill_",
    "angle",  # (a real result whose Thunder gradient is eager's, checked; not abs: its backward runs torch.sign of a complex)
})


def check_complex_gradients(top_bsyms) -> None:
    """Note [a complex product's gradient conjugates]: refuse an op outside ``_RIGHT`` and the view ops that
    reads or makes a complex tensor that requires grad (``top_bsyms``: the computation trace as traced). The
    trace's proxies of intermediates do not say whether they require grad, so it is followed from the inputs:
    every tensor made from one that requires grad does, but through ``detach`` (a write under ``no_grad`` is
    counted as one that does, which may refuse more than needed)."""
    allowed = _RIGHT | _view_names()
    requires: set = set()
    for b in top_bsyms:
        if b.sym.id is prims.PrimIDs.RETURN:
            continue
        if b.sym.name.startswith("unpack"):
            requires.update(t.name for t in tensor_outs(b) if t.requires_grad)
            continue
        args = [t for t in proxy_args(b) if isinstance(t, TensorProxy)]
        if b.sym.name != "detach" and any(t.name in requires for t in args):
            requires.update(t.name for t in tensor_outs(b) if dtypes.is_inexact_dtype(t.dtype))
        if b.sym.name in allowed or prims.OpTags.AUTO_REGISTERED in (b.sym.tags or ()):
            continue  # (an op Thunder runs as torch's own function, torch.fft.rfft: torch's autograd, conjugated)
        if not any(dtypes.is_inexact_dtype(t.dtype) for t in tensor_outs(b)):
            continue  # (no gradient to get wrong: ``x.is_complex()``, ``x.dim()``, ``x == y``; session 31 sweep)
        for t in (*args, *tensor_outs(b)):
            if t.name in requires and dtypes.is_complex_dtype(t.dtype):
                raise AliasInputError(
                    f"fusion_alias: in a call that computes gradients, {b.sym.name} of the complex tensor {t.name}, "
                    "which requires grad, is not supported: Thunder 0.2.6's gradient of it is not conjugated as "
                    "PyTorch's is, so the gradient would be wrong (Note [a complex product's gradient conjugates]). "
                    "Products, quotients, sums and views of complex values run; compute the rest on the real and "
                    "imaginary parts, or without gradients")
