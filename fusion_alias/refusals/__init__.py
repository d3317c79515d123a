"""Refusals: programs fusion_alias will not run, each with an error that names the problem.

Two kinds, checked on the flattened trace after alias analysis (stage
``check_refusals`` of ``fusion_alias.pipeline``):

* programs eager PyTorch rejects, which a fused region would run anyway and
  get wrong: an operand that overlaps what its in-place op writes
  (``operands``), a write into an ``expand()``ed tensor or a value that does not
  broadcast (``writes``);
* programs eager's autograd rejects (a tensor saved for the backward, then written; a write into an
  output of ``unbind``/``chunk``/``split``), in calls that compute gradients (``saved_versions``); in
  such a call that writes nothing, a returned view eager passes no gradient through (``returned_views``);
* programs eager accepts but Thunder 0.2.6's autodiff gets wrong without an
  error, in calls that compute gradients (``autograd``).

``inplace_ops`` recovers the user's in-place ops as they called them (the
operand checks need them: eager checks operands before any decomposition).
"""

from __future__ import annotations

import torch

from fusion_alias import dtype_rules
from fusion_alias.aliasing import AliasInfo
from fusion_alias.proxies_by_name import tensor_proxies_by_name
from fusion_alias.errors import AliasInputError
from fusion_alias.components import shared_storage_groups
from fusion_alias.refusals.bool_keys import refuse_bool_key
from fusion_alias.refusals.autograd import (
    _check_aliased_inputs_with_gradients,
    _check_index_put_gradients,
    _check_no_read_of_overwritten_values,
    _check_outputs_sharing_written_memory,
)
from fusion_alias.refusals.foreach_lists import check_foreach_lists
from fusion_alias.refusals.foreach_saves import group_saves
from fusion_alias.refusals.inplace_ops import (
    _has_lost_its_inplace_ops,
    _has_own_inplace_ops,
    _inplace_ops_by_write,
    _traced_program,
)
from fusion_alias.refusals.operands import _check_original_operands, _compares_operands
from fusion_alias.refusals.saved_versions import check_saved_versions
from fusion_alias.refusals.tensor_arguments import TENSOR_ONLY_SECOND, check_tensor_argument
from fusion_alias.refusals.writes import _check_writes, check_self_copies

__all__ = ["AliasInputError", "check_refusals"]

_INDEXING = frozenset({"getitem", "setitem_", "__setitem__"})  # (the key is their second argument)
# the checks of the program as traced that ride dtype_rules.check_dtypes's walk, by op name
_BY_NAME = {**dict.fromkeys(TENSOR_ONLY_SECOND, check_tensor_argument), **dict.fromkeys(_INDEXING, refuse_bool_key)}


def check_refusals(
    trace,
    flat,
    renamed: dict,
    info: AliasInfo,
    tensor_inputs,
    input_groups,
    actual: dict,
    ctx,
    proxies=None,
    autograd_refusals: bool = True,
    saved_versions: bool = False,
    selves=None,
) -> None:
    """Raise ``AliasInputError`` for the first refused write of ``flat`` (the flattened trace, without
    ``update_aliases``; ``renamed`` is what dropping them renamed), in program order. ``proxies``:
    ``proxies_by_name.tensor_proxies_by_name(flat, tensor_inputs)``, if the caller has it already.
    ``autograd_refusals=False``: only what eager refuses (the program is functionalized before
    Thunder's autodiff, ``autograd_functionalize.py``). ``saved_versions``: the call computes gradients
    and its trace is the user-level one: check eager's autograd rejections (``saved_versions``)."""
    input_names = frozenset(p.name for p in tensor_inputs)
    inplace_ops = _inplace_ops_by_write(
        trace.bound_symbols, renamed, lambda op: _compares_operands(op, info, actual, input_names))
    if proxies is None:
        proxies = tensor_proxies_by_name(flat, tensor_inputs)
    original = _traced_program()  # (the program as traced, asked once: each of the checks below reads it)
    if _has_lost_its_inplace_ops(trace) or _has_own_inplace_ops(original):
        _check_original_operands(ctx, actual)
    grad_inputs = (
        {p.name for p in tensor_inputs if p.requires_grad} if autograd_refusals and torch.is_grad_enabled() else set()
    )
    traced = (original or trace).bound_symbols
    # (one walk of the program as traced: dtype_rules.py, Note [the dtype checks in one walk]) a Python bool
    # key, refused as traced (with gradients, Thunder's autodiff decomposed it before the pass); an argument
    # eager takes only as a tensor (tensor_arguments.py, Note [an argument eager takes only as a tensor])
    dtype_rules.check_dtypes(traced, _BY_NAME)
    renamed_names = {v.proxy.name: p.name for v, p in renamed.items()}  # (flat's names for the traced ones)
    check_self_copies(traced, info, actual, renamed_names)  # (dropped from flat before _check_writes looks)
    computes_gradients = torch.is_grad_enabled() and any(p.requires_grad for p in tensor_inputs)
    _check_writes(flat, info, actual, proxies, inplace_ops, grad_inputs, input_names, computes_gradients)
    if saved_versions and computes_gradients:
        check_foreach_lists(ctx.foreach_writes, trace.bound_symbols, info, renamed_names)
        check_saved_versions(trace.bound_symbols, info, tensor_inputs, input_groups, renamed_names, selves,
                             shared_storage_groups(actual.items()),  # (Note [one version counter per storage])
                             group_saves(ctx.foreach_saves, trace.bound_symbols))  # (foreach_saves.py)
        _check_index_put_gradients(trace.bound_symbols, info, {p.name for p in tensor_inputs if p.requires_grad})
    if grad_inputs:
        _check_index_put_gradients(flat, info, grad_inputs)
        _check_aliased_inputs_with_gradients(flat, shared_storage_groups(actual.items()) or input_groups)
        _check_no_read_of_overwritten_values(flat)
        _check_outputs_sharing_written_memory(flat, info)
