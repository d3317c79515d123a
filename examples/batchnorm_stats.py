"""BatchNorm in training mode: the running statistics are updated in place.

First ``torch.nn.BatchNorm1d`` itself, followed by a residual add and an
in-place ReLU, through ``fusion_alias.jit`` (buffers are read and written
through the module) and through ``torch.compile`` with
``fusion_alias.dynamo_backend()``. Then a hand-written batch norm whose running
mean and variance are the two rows of one statistics buffer
(``stats[0]``, ``stats[1]``), as flat-buffer implementations keep them.

    python examples/batchnorm_stats.py
"""

from _compare import compare, differences

import copy

import torch

import fusion_alias

N, C = 16, 8
MOMENTUM, EPS = 0.1, 1e-5


class BNResidual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(C, momentum=MOMENTUM, eps=EPS)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x, residual):
        y = self.bn(x)
        y += residual
        return self.relu(y)


def batch_norm_train(x, weight, bias, running_mean, running_var, num_batches):
    mean = x.mean(0)
    var = x.var(0, correction=0)
    running_mean.mul_(1 - MOMENTUM).add_(mean, alpha=MOMENTUM)
    running_var.mul_(1 - MOMENTUM).add_(x.var(0, correction=1), alpha=MOMENTUM)
    num_batches.add_(1)
    return (x - mean) * torch.rsqrt(var + EPS) * weight + bias


def flat_stats_inputs():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N, C, generator=gen) * 2 + 1
    weight, bias = torch.randn(C, generator=gen), torch.randn(C, generator=gen)
    stats = torch.stack([torch.zeros(C), torch.ones(C)])  # running mean, running var: rows of one buffer
    return x, weight, bias, stats[0], stats[1], torch.zeros((), dtype=torch.long)


def module_steps():
    """nn.BatchNorm1d through fusion_alias.jit and torch.compile: two training-mode steps, state compared."""
    print("=" * 78)
    print("torch.nn.BatchNorm1d (training mode) + `y += residual` + ReLU(inplace=True)")
    torch.manual_seed(0)
    eager = BNResidual().train()
    by_jit, by_compile = copy.deepcopy(eager), copy.deepcopy(eager)
    jitted = fusion_alias.jit(by_jit, backend="reference")
    backend = fusion_alias.dynamo_backend(backend="reference")
    compiled = torch.compile(by_compile, backend=backend)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _ in range(2):
            x, r = torch.randn(N, C, generator=gen), torch.randn(N, C, generator=gen)
            expected = eager(x.clone(), r.clone())
            for name, run, module in (("fusion_alias.jit", jitted, by_jit), ("torch.compile", compiled, by_compile)):
                got = run(x.clone(), r.clone())
                diff = differences(got, expected, list(module.state_dict().values()), list(eager.state_dict().values()))
                assert not diff, f"{name} differs from eager: {', '.join(diff)}"
    n_jit, n_compile = len(fusion_alias.regions(jitted)), backend.region_count()
    print("fusion_alias.jit and torch.compile(backend=fusion_alias.dynamo_backend()): match eager "
          "(outputs, running_mean, running_var, num_batches_tracked; two steps)")
    print(f"regions: fusion_alias.jit {n_jit}, torch.compile {n_compile}")
    for b in fusion_alias.regions(jitted):
        print(repr(b._call_ctx[b.sym.name]))
    return n_jit


if __name__ == "__main__":
    n_module = module_steps()
    n_flat = compare("hand-written batch norm, running mean/var = rows of one stats buffer", batch_norm_train,
                     flat_stats_inputs)
    print("=" * 78)
    print(f"regions: nn.BatchNorm1d block {n_module}, flat-stats batch norm {n_flat}")
