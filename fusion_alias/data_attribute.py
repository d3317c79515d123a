"""``Tensor.data`` inside a compiled function, read as ``detach()``.

Note [Tensor.data as detach]
----------------------------
``p.data`` is the idiom of older optimizer, EMA and initialisation code::

    ema.data.mul_(0.999).add_(p.data, alpha=0.001)
    p.data.add_(g, alpha=-lr)

Thunder 0.2.6's tensor proxies have no ``data`` ("Unknown attribute data": plain ``thunder.jit``
fails on such a program, before any fusion pass). ``x.data`` is ``x``'s memory with ``x``'s sizes,
strides and offset, outside autograd: what ``x.detach()`` is, which Thunder traces. So in
compilations with ``fusion_alias.executor`` in the executor list, the proxies' ``data`` is
``detach()``; elsewhere it is the error it was. In a call that computes no gradient the detached
tensor is the same view (aliasing.py, Note [detach is the same view]), and ``p.data.add_(g)``
writes ``p``'s memory as ``p.add_(g)`` does.

The two differ in eager only inside autograd: a write through ``x.data`` does not bump ``x``'s
version counter, where one through ``x.detach()`` does, so a tensor saved for the backward and
modified through ``.data`` goes unnoticed, and the gradient is computed from the new values::

    y = w * 1; z = y.sin(); y.data.mul_(2); z.sum().backward()   # eager: w.grad = cos(2 y)

Functionalized before Thunder's autodiff, such a program gave ``cos(y)``; a buffer saved by an op
and then written through ``.data`` differs alike, and the trace cannot tell which intermediate
values require grad. So in a compilation that builds Thunder's autodiff (``fusion_alias.jit``
builds one only for calls that compute gradients: api.py, Note [no autodiff for a call that
computes no gradient]; ``thunder.jit`` with the executor builds one unless ``disable_torch_autograd``
is given), ``x.data`` is refused with an error that names ``.detach()`` and ``torch.no_grad()``.
Assigning ``x.data = y`` never reaches the property (Thunder's interpreter does not call a proxy's
setter): into a tensor that outlives the call it is refused as an attribute set in forward
(dropped_attributes.py); into a tensor the function made, Thunder 0.2.6 fails with its own error.
"""

from __future__ import annotations

from thunder.core.compile_data import get_compile_data
from thunder.core.proxies import TensorProxy
from thunder.torch import detach as ldetach


def _ours(executor) -> bool:
    compile_data = get_compile_data()
    return compile_data is not None and executor in compile_data.executors_list


def register(executor) -> None:
    """Give Thunder's tensor proxies a ``data`` that is ``detach()`` in compilations with ``executor``
    (module Note); nothing where a Thunder version has one already."""
    if "data" in vars(TensorProxy):
        return

    def data(self):
        if not _ours(executor):
            raise AttributeError("Unknown attribute data")  # (Thunder's own error, as without fusion_alias)
        if not get_compile_data().disable_torch_autograd_support:  # (module Note: a compilation with autodiff)
            raise NotImplementedError(
                f"fusion_alias: Tensor.data ({self.name}.data) in a call that computes gradients is not supported "
                "(or in thunder.jit without disable_torch_autograd=True): a write through it escapes autograd in "
                "eager (a tensor saved for the backward changes unnoticed), which fusion_alias does not reproduce. "
                "Use .detach() (eager then checks such writes), or call the function under torch.no_grad() where "
                "no gradient is needed")
        return ldetach(self)

    TensorProxy.data = property(data, doc="``detach()`` in fusion_alias compilations (data_attribute.py)")
