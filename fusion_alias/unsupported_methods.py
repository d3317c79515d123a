"""In-place ``Tensor`` methods Thunder 0.2.6 does not trace: the error that names each, with a workaround."""

from __future__ import annotations

from collections.abc import Callable


class UnsupportedMethodError(AttributeError):
    """An in-place ``Tensor`` method Thunder 0.2.6 does not trace (an ``AttributeError``, as Thunder's
    own, so that ``hasattr`` still answers False), with a message that names it and a workaround."""


# Note [in-place methods Thunder lacks]
# -------------------------------------
# Thunder's proxies answer an in-place method they do not have with ``AttributeError: Unknown
# attribute t_``, which reads like a typo in the program (session 17 hand probe: ``t_``,
# ``transpose_``, ``squeeze_``, ``unsqueeze_``, ``as_strided_``, ``resize_``, ``fill_diagonal_``,
# ``put_``, ``addmm_``). The ones that change a tensor's shape or strides in place have a rebinding
# out-of-place form; the others compute a value that ``copy_`` can write back.
_SHAPE_METHODS = {
    "t_": "x = x.t()", "transpose_": "x = x.transpose(d0, d1)", "swapdims_": "x = x.swapdims(d0, d1)",
    "swapaxes_": "x = x.swapaxes(d0, d1)", "squeeze_": "x = x.squeeze(...)", "unsqueeze_": "x = x.unsqueeze(d)",
    "as_strided_": "x = x.as_strided(...)", "resize_": "x = x.new_empty(shape) or x.reshape(shape)",
    "resize_as_": "x = x.new_empty(other.shape)", "set_": "x = other",
}


# in-place methods that change no values: what to do instead
_FLAG_METHODS = {
    "requires_grad_": "set requires_grad on the tensor before the call", "detach_": "x = x.detach()",
    "share_memory_": "call it before the call",
}


def unsupported_method_message(proxy, attr: str, proxy_getattr: Callable) -> str:
    """The message for ``proxy.attr``, an in-place method Thunder lacks (``proxy_getattr``: Thunder's own
    attribute lookup, asked whether the out-of-place method exists for the workaround)."""
    if attr in _FLAG_METHODS:
        return (f"fusion_alias: Tensor.{attr} is not supported: Thunder 0.2.6 does not trace it. "
                f"Workaround: {_FLAG_METHODS[attr]}")
    if attr in _SHAPE_METHODS:
        return (f"fusion_alias: Tensor.{attr} changes a tensor's shape or strides in place, which Thunder 0.2.6 "
                f"does not trace: not supported. Workaround: rebind the name instead ({_SHAPE_METHODS[attr]})")
    try:
        proxy_getattr(proxy, attr[:-1])
        workaround = f"x.copy_(x.{attr[:-1]}(...))"
    except AttributeError:  # (Thunder lacks the out-of-place method too: put_, fill_diagonal_)
        workaround = "compute the value with ops Thunder traces and write it back with x.copy_(value)"
    return (f"fusion_alias: the in-place method Tensor.{attr} is not supported: Thunder 0.2.6 does not trace it. "
            f"Workaround: {workaround}")
