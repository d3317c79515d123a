"""Indexing with a Python bool, refused (Thunder 0.2.6 traces the bool as an int); and slices bounded by a
tensor, refused by name (Thunder 0.2.6 fails on them with an error about ``None``)."""

from __future__ import annotations

from thunder.core.proxies import TensorProxy


def _bool_key(args) -> bool:
    """Whether a ``getitem``'s key holds a Python bool (``x[True]``, ``x[:, False]``, ``x[[True, False]]``).

    Note [getitem with a bool key is refused]: Thunder 0.2.6 decomposes ``x[True]`` as if the bool
    were the int 1 (``slice_prim(x, [True, 0], ...)``: row 1, where eager adds a dim of size 1), so a
    region computed a wrong value (hostile probe 12). Its trace also gives the result the wrong shape
    (``(3,)`` for eager's ``(1, 2, 3)``), so no op after it can be trusted, even run by torch: refused.
    """
    key = args[1] if len(args) > 1 else None
    parts = key if isinstance(key, (tuple, list)) else (key,)
    return any(isinstance(k, bool) or (isinstance(k, (tuple, list)) and any(isinstance(i, bool) for i in k))
               for k in parts)


def refuse_bool_key(bsym) -> None:
    """Raise for a ``getitem`` whose key holds a Python bool (Note [getitem with a bool key is refused]).
    The pass asks it of each getitem it flattens, and ``refusals`` of the program as traced: in a call
    that computes gradients Thunder's autodiff has decomposed the getitem before the pass sees it."""
    if _bool_key(bsym.args):
        _refuse()


def _refuse() -> None:
    raise NotImplementedError(
        "fusion_alias: indexing with a Python bool (x[True], x[:, False], x[[True, False]]) is not "
        "supported: Thunder 0.2.6 traces it as the int 1 or 0, with a shape eager does not give. "
        "Workaround: x.unsqueeze(d) for True, x.new_empty((0, *x.shape)) for False, or a bool tensor index")


# Note [a bool key refused as it is traced]
# -----------------------------------------
# The pass refuses a ``getitem`` with a bool key where it meets it in the trace, but the trace may not
# be finished: Thunder gives ``a[True, 0]`` of a (2, 3, 4) tensor a 1-d shape (eager: (1, 3, 4)), so a
# later ``t0[:, False]`` raised Thunder's "IndexError: too many indices for tensor of dimension 1" while
# tracing, an error about a shape the user's program never has (fuzz seed 20115 #73, edges). The
# interpreter's lookaside for ``TensorProxy.__getitem__`` refuses such a key where it is first met.
_proxy_getitem = TensorProxy.__getitem__


def _getitem(a, key):
    if _bool_key((a, key)):
        _refuse()
    if _tensor_bound(key):
        _refuse_tensor_bound()
    return _proxy_getitem(a, key)


# Note [a slice bounded by a tensor]
# ----------------------------------
# ``cache[:, :, :pos.max() + 1]`` (a KV cache read up to the last position written) slices with a 0-d tensor
# as its bound: eager reads its value, so the result's shape depends on data. Thunder 0.2.6 raises "ValueError:
# None had an unexpected type <class 'NoneType'>" while tracing it (plain ``thunder.jit`` too; session 26 hand
# probe), which names nothing the program did. It is refused here with what to do instead.
def _tensor_bound(key) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, slice) and any(isinstance(b, TensorProxy) for b in (k.start, k.stop, k.step))
               for k in parts)


def _refuse_tensor_bound() -> None:
    raise NotImplementedError(
        "fusion_alias: a slice bounded by a tensor (x[:t.max() + 1]) is not supported: its size depends on the "
        "tensor's value, which Thunder 0.2.6 does not trace. Workaround: pass the bound as a Python int argument "
        "(the call is compiled again for each new value), or slice outside the compiled function")


def register(executor) -> None:
    """Lend ``executor`` a lookaside for ``x[key]`` that refuses a Python bool key as it is traced."""
    executor._lookasides[_proxy_getitem] = _getitem
