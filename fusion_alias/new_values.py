"""New tensor proxies shaped like existing ones, as read substitution makes them by the thousand.

Note [a proxy copied from the one it is like]
---------------------------------------------
``TensorProxy(like=p)`` under a trace context validates every property of ``p`` again
(``_infer_tensor_properties``: a dozen type checks, the shape walked twice) and costs
16-21 µs; read substitution on the bench's ``views`` trace makes three per read of a
view (the replayed slice and squeeze, and the pushed-down op), 43k at 100k symbols.
``p`` was validated when it was made, so :func:`tensor_like` copies its fields and
changes only those a new proxy does not take from ``like``: a fresh name from the
trace, no history, no tags, no FSDP padding, and no ``requires_grad`` (the constructor's
argument defaults to False even with ``like``) (about 2 µs). Example: ``tensor_like(trace,
t5)`` with ``t5`` a float32 ``(8,)`` proxy gives ``t17``, a float32 ``(8,)`` proxy,
the same as ``TensorProxy(like=t5)`` under ``tracectx(trace)`` but for the name.

It does so only while a proxy made the slow way, for each sample in ``_SAMPLES``,
holds exactly the fields the copy makes (checked once, at the first call); with a
Thunder version whose proxies hold other fields, it makes them the slow way.
"""

from __future__ import annotations

from thunder.core import devices, dtypes
from thunder.core.proxies import TensorProxy
from thunder.core.trace import TraceCtx, tracectx

# the fields a new proxy does not take from ``like`` (Proxy.__init__, TensorProxy.__init__ in Thunder 0.2.6:
# ``requires_grad`` is an argument that defaults to False, not taken from ``like``)
_OWN = {"_has_weak_name": True, "history": None, "_thunder_fsdp_padding_size": None, "_requires_grad": False,
        "_grad": None}


def _copied(trace: TraceCtx, like: TensorProxy) -> TensorProxy:
    new = TensorProxy.__new__(TensorProxy)
    fields = new.__dict__
    fields.update(like.__dict__)
    fields.update(_OWN)
    fields["_name"] = trace.make_name(prefix=TensorProxy._DEFAULT_PREFIX)
    fields["_tags"] = set()
    return new


def _slow(trace: TraceCtx, like: TensorProxy) -> TensorProxy:
    with tracectx(trace):
        return TensorProxy(like=like)


def _samples(trace: TraceCtx) -> list[TensorProxy]:
    with tracectx(trace):
        return [
            TensorProxy(shape=(8, 4), device=devices.cpu, dtype=dtypes.float32),
            TensorProxy(shape=(), device=devices.cpu, dtype=dtypes.float16, requires_grad=True),
            TensorProxy(shape=(3,), device=devices.cpu, dtype=dtypes.int64, tags={"x"}),
            TensorProxy(shape=(2, 0, 5), device=devices.cpu, dtype=dtypes.bool8),
        ]


def copy_matches_constructor() -> bool:
    """Whether :func:`_copied` makes what ``TensorProxy(like=...)`` makes, on every sample
    (Note [a proxy copied from the one it is like])."""
    trace = TraceCtx()
    for like in _samples(trace):
        made, copied = vars(_slow(trace, like)), vars(_copied(trace, like))
        if made.keys() != copied.keys():
            return False
        if any(made[k] != copied[k] for k in made if k != "_name"):
            return False
    return True


_COPY_OK: list[bool] = []  # (decided at the first call)


def tensor_like(trace: TraceCtx, like: TensorProxy, dtype=None) -> TensorProxy:
    """A new tensor proxy named in ``trace``, with ``like``'s shape, device, dtype and grad
    fields: ``TensorProxy(like=like)`` under ``tracectx(trace)``, made faster (Note [a proxy
    copied from the one it is like]). ``dtype``, where given and not ``like``'s, replaces it."""
    if dtype is not None and dtype != like.dtype:
        with tracectx(trace):
            return TensorProxy(like=like, dtype=dtype)
    if not _COPY_OK:
        _COPY_OK.append(copy_matches_constructor())
    if _COPY_OK[0] and type(like) is TensorProxy:
        return _copied(trace, like)
    return _slow(trace, like)
