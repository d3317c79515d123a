"""The torch.compile path: a ThunderFX backend that compiles each FX subgraph with ``fusion_alias.jit``.

    import torch, fusion_alias
    compiled = torch.compile(model, backend=fusion_alias.dynamo_backend())

``thunder.dynamo.ThunderCompiler`` splits the graph Dynamo captured into pieces
Thunder supports (the rest goes to Inductor) and compiles each piece with
``thunder.jit``: Thunder's own alias pass on, no alias guard. Here each piece is
compiled with ``fusion_alias.jit`` instead, so it gets what a direct
``fusion_alias.jit`` call gets: one program per input alias structure (the
guard runs on every call, on the tensors Dynamo hands the piece, parameters
and buffers included), Thunder's alias pass skipped except where gradients are
needed, and the same regions.

Note [aliased graph inputs under Dynamo]
----------------------------------------
Dynamo passes each distinct tensor argument as its own graph input, so seed f
called with ``(x, x[0, 0])`` reaches the piece as two placeholders that share
memory. Its guards are on sizes, strides and dtypes, not on which inputs
overlap, so a later call with independent tensors of the same layout reuses
the captured graph. That is right here because the piece's guard is ours: it
looks at the actual tensors on each call and compiles (or reuses) the program
for that alias structure. With ``thunder.jit`` in its place, the first call
already fails in Thunder's alias pass (``Attempting to reshape a.shape=(5, 5)
to shape=()``).
"""

from __future__ import annotations

import contextlib
from functools import partial

import torch

from fusion_alias import foreach_lookasides, inplace_lookasides, out_arguments
from fusion_alias.api import jit as _fusion_alias_jit


class AliasJitModule(torch.nn.Module):
    """One FX piece compiled by ``fusion_alias.jit``, as the module ThunderFX's splitter installs.

    ``thunder.last_traces(module)`` and ``fusion_alias.regions(module)`` see the
    program used by the most recent call.
    """

    def __init__(self, graph_module: torch.fx.GraphModule, jitted):
        super().__init__()
        self.graph_module = graph_module
        self.jitted = jitted

    def forward(self, *args, **kwargs):
        return self.jitted(*args, **kwargs)

    # thunder.last_traces / compile_stats look these up
    @property
    def _lc_cs(self):
        return self.jitted._lc_cs

    @property
    def _lc_cd(self):
        return self.jitted._lc_cd

    @property
    def _lc_transforms(self):
        return self.jitted._lc_transforms


@contextlib.contextmanager
def _inplace_ops_we_add_supported():
    """ThunderFX's splitter, told that the in-place ops fusion_alias adds are traceable (inplace_lookasides.py,
    Note [in-place ops fusion_alias adds, under torch.compile]): each such node is run on proxies as the
    splitter runs Thunder's own symbols, and kept in the piece where that succeeds."""
    from thunder.dynamo import splitter
    from thunder.dynamo.utils import try_execute_thunder_symbol

    thunders = splitter.is_node_supported_by_thunder

    def supported(node, thunder_options):
        answer = thunders(node, thunder_options)
        if answer[0]:
            return answer
        ours = (inplace_lookasides.traced_for_fx_node(node.op, node.target)
                or foreach_lookasides.traced_for_fx_node(node.op, node.target)
                or out_arguments.traced_for_fx_node(node))  # (out_arguments.py, Note [out= under torch.compile])
        if ours is None:
            return answer
        ran, reason = try_execute_thunder_symbol(ours, node, thunder_options)
        return (True, None) if ran else answer

    splitter.is_node_supported_by_thunder = supported
    try:
        yield
    finally:
        splitter.is_node_supported_by_thunder = thunders


def _thunder_compiler_class():
    from thunder.dynamo import ThunderCompiler

    return ThunderCompiler


class FusionAliasCompiler(_thunder_compiler_class()):
    """``thunder.dynamo.ThunderCompiler`` with ``fusion_alias.jit`` in place of ``thunder.jit``.

    ``backend``, ``schedule`` as for ``fusion_alias.jit``; other keyword
    arguments go to Thunder as ThunderCompiler's do. ``executors`` is not
    accepted: the fusion_alias executor is the fusion executor, Thunder's torch
    and python executors follow it.
    """

    def __init__(self, *, backend: str = "auto", schedule: str = "reads-first", **thunder_options):
        if "executors" in thunder_options:
            raise TypeError("fusion_alias.dynamo_backend: executors= is not accepted (fusion_alias.jit chooses them)")
        super().__init__(**thunder_options)
        self.backend = backend
        self.schedule = schedule
        self.compiled_pieces: list[AliasJitModule] = []  # every piece compiled so far, in order

    def _jit_piece(self, graph_module, **options):
        jitted = _fusion_alias_jit(graph_module, backend=self.backend, schedule=self.schedule, **options)
        module = AliasJitModule(graph_module, jitted)
        self.compiled_pieces.append(module)
        return module

    def __call__(self, gm: torch.fx.GraphModule, sample_args):
        # ThunderCompiler.__call__'s steps, called one by one, with our jit handed to the splitter
        from thunder.dynamo.compiler import (
            _splitter,
            _with_prologue_pruning_transform,
            is_dynamic_inputs,
            is_in_torch_compile,
        )
        from thunder.dynamo.utils import recompile_graph, remove_empty_autocast

        remove_empty_autocast(gm)
        recompile_graph(gm)
        options = _with_prologue_pruning_transform(
            current_thunder_options=self.thunder_options,
            is_torch_compile_without_dynamic=is_in_torch_compile() and not is_dynamic_inputs(sample_args),
        )
        with _inplace_ops_we_add_supported():
            split_module, subgraph_info = _splitter(
                gm, partial(self._jit_piece, **options), torch._inductor.compile, sample_args, options
            )
        self.subgraph_infos.append(subgraph_info)
        return split_module

    def region_count(self) -> int:
        """Fusion regions over every compiled piece (each piece's most recent program)."""
        from fusion_alias.api import regions

        return sum(len(regions(p)) for p in self.compiled_pieces if p.jitted._last is not None)


def dynamo_backend(*, backend: str = "auto", schedule: str = "reads-first", **thunder_options) -> FusionAliasCompiler:
    """A ``torch.compile`` backend: ``torch.compile(fn, backend=fusion_alias.dynamo_backend())``."""
    return FusionAliasCompiler(backend=backend, schedule=schedule, **thunder_options)
