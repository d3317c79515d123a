"""A stand-in for ``nvfuser_direct`` on CPU: the nvFuser wrapper's whole call path, without a GPU.

It models nvfuser_direct's Python API as far as the wrapper uses it: positional op signatures with the
real parameter names (read from nvfuser_direct 0.2.36), ``define_scalar(dtype)`` /
``define_scalar(value, dtype)``, a context-manager ``FusionDefinition``, ``compute_tensor_descriptor``
(contiguity False where a stride is not the product of the sizes inside it), and ``execute()`` returning
the plain outputs (and, optionally, the aliased ones first, which nvFuser hides). It executes the
recorded definition with the reference backend's runner, reads first, and writes a write-back into an
input that is not dense as nvFuser 0.2.36 did on an H200: as if the input were contiguous from its first
element (Note [write-backs into strided inputs]).

It proves the wrapper's plumbing (build, cache, output order and dtypes, views, write-backs, deferred
write-backs, fallbacks); it says nothing else about real nvFuser, whose definitions are built on CPU by
``python -m fusion_alias.nvfuser_check`` and executed only on a GPU (``scripts/gpu_check.sh``). Used by
``tests/test_nvfuser.py`` and by ``python -m fusion_alias.fuzz --nvfuser-stand-in``.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import torch

from fusion_alias.backends.reference import run_recorded
from fusion_alias.lowering import RecordedDataType, RecordingFusionDefinition

_REAL_SIGNATURES = {
    "cast": ("dtype",),
    "broadcast_in_dim": ("shape", "broadcast_dims"),
    "reshape": ("new_shape",),
    "slice": ("start_indices", "end_indices", "strides"),
    "squeeze": ("dims",),
    "permute": ("dims",),
    "pad": ("pad_widths", "value"),
    "sum": ("dims", "keepdim"),
    "max": ("dims", "keepdim"),
    "min": ("dims", "keepdim"),
    "prod": ("dims", "keepdim"),
}


class StandInOps:
    def __init__(self, fd):
        self._fd = fd

    def __getattr__(self, name):
        def op(*args):
            if name == "full":
                shape, fill, dtype = args
                return self._fd._record("ops.full", (), {"shape": shape, "fill_value": fill, "dtype": dtype}, "T")
            names = _REAL_SIGNATURES.get(name)
            if names is None:
                return self._fd._record("ops." + name, args, {}, "T")
            assert len(args) - 1 <= len(names), (name, args)
            return self._fd._record("ops." + name, args[:1], dict(zip(names, args[1:])), "T")

        return op


class StandInFusionDefinition(RecordingFusionDefinition):
    return_aliased = False  # whether execute() also returns the aliased outputs (first), as some versions do

    def __init__(self):
        super().__init__()
        self.ops = StandInOps(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def define_scalar(self, *args):
        if len(args) == 1:  # an input: define_scalar(dtype)
            return self._record("define_scalar", (), {"dtype": args[0]}, "S")
        value, dtype = args
        return self._record("define_scalar", (value,), {"dtype": dtype}, "S")

    def execute(self, inputs, device=None, **options):
        self.execute_options = options  # Thunder's nv_* compile options, as the wrapper passes them
        inputs = list(inputs)
        strided = strided_destinations(self, inputs)
        before = {i: inputs[i].clone() for i in strided}
        env = run_recorded(self, inputs, "reads-first")
        for i, value in strided.items():  # what nvFuser 0.2.36 did on an H200
            dst = inputs[i]
            dst.copy_(before[i])
            torch.as_strided(dst, dst.shape, dense_strides(dst.shape), dst.storage_offset()).copy_(env[value])
        outs = [c for c in self.calls if c.op == "add_output"]
        aliased = [env[c.args[0].index] for c in outs if "alias_input" in c.kwargs]
        plain = [env[c.args[0].index] for c in outs if "alias_input" not in c.kwargs]
        return (aliased if self.return_aliased else []) + plain

    def repro_script_for(self, inputs=None):  # the method thunder.examine.get_nvfuser_repro calls
        shapes = [tuple(t.shape) if isinstance(t, torch.Tensor) else t for t in inputs or ()]
        return self.to_source("repro") + f"\n# inputs: {shapes}"


def tensor_descriptor(shape, stride):
    """``(contiguity, stride_order)`` as ``nvfuser_direct.compute_tensor_descriptor`` gives them."""
    order = sorted(range(len(shape)), key=lambda d: (stride[d], d))  # innermost first
    stride_order = [0] * len(shape)
    for rank, d in enumerate(order):
        stride_order[d] = rank
    contiguity = [None] * len(shape)
    expected = 1
    for d in order:  # dense when each stride is the product of the sizes inside it
        if shape[d] == 1 or stride[d] == 0:
            continue
        contiguity[d] = stride[d] == expected
        expected = stride[d] * shape[d]
    return contiguity, stride_order


def dense_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def strided_destinations(fd, inputs):
    """Input position -> written value index, for each aliased write-back into an input that is not dense."""
    defs = [c for c in fd.calls if c.op == "define_tensor" or (c.op == "define_scalar" and not c.args)]
    position = {c.out.index: i for i, c in enumerate(defs)}
    found = {}
    for c in fd.calls:
        if c.op == "add_output" and "alias_input" in c.kwargs:
            i = position[c.kwargs["alias_input"].index]
            if False in defs[i].kwargs.get("contiguity", ()):
                found[i] = c.args[0].index
    return found


def stand_in(return_aliased: bool = False) -> SimpleNamespace:
    """A module-like stand-in for ``nvfuser_direct``."""
    fd_class = type("FusionDefinition", (StandInFusionDefinition,), {"return_aliased": return_aliased})
    return SimpleNamespace(FusionDefinition=fd_class, DataType=RecordedDataType, compute_tensor_descriptor=tensor_descriptor)


def patches(fake: SimpleNamespace) -> list[tuple[object, str, object]]:
    """``(module, attribute, value)``: every region of every ``fusion_alias.jit`` through the nvFuser
    wrapper over ``fake``, CPU tensors included (apply with ``monkeypatch.setattr`` or :func:`install`)."""
    from fusion_alias.backends import nvfuser as nvb

    executor_module = importlib.import_module("fusion_alias.executor")
    return [
        (nvb, "_nvfuser", lambda: fake),
        (nvb, "require", lambda: None),
        (nvb, "_nvfuser_can_take", lambda args: True),
        (executor_module, "make_callable", lambda spec, backend, schedule: nvb.NvFuserFusion(spec)),
    ]


def install(return_aliased: bool = False) -> SimpleNamespace:
    """Apply :func:`patches` for the rest of the process (the fuzzer's ``--nvfuser-stand-in``)."""
    fake = stand_in(return_aliased)
    for module, name, value in patches(fake):
        setattr(module, name, value)
    return fake
