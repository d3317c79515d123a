"""Benchmark of fusion_alias: region quality, partition cost at scale, compile share.

Run ``python -m fusion_alias.bench [--quick] [--out DIR]``. It prints a
markdown report and writes it, with two PNG plots, to ``DIR`` (default
``bench-results/``):

1. **Region quality** (:mod:`~fusion_alias.bench.regions`) on the suite of
   alias programs (:mod:`~fusion_alias.bench.programs`): fusion_alias's region
   count, Thunder 0.2.6's (its own alias pass, then ``fuse_bound_symbols``
   with the same fusibility rule), and the optimum
   (:mod:`~fusion_alias.bench.optimum`).
2. **Partition cost at scale** (:mod:`~fusion_alias.bench.scale`): synthetic
   traces of 1k, 10k and 100k bound symbols, alias analysis + substitution,
   graph building and partitioning timed separately, growth exponents, Thunder's
   grouping and alias pass on the same traces; and the pass's share of a whole
   ``thunder.jit`` compile on the seed programs and a 1,000-line program.
3. **Plots**: ``regions.png`` (regions per program, three bars each) and
   ``scale.png`` (time vs bound symbols, log-log).
4. A summary line, printed last.

``--quick`` (under 3 minutes on 2 cores): sizes 1k and 10k, the compile share
on three seed programs and the 1,000-line program, no Thunder-default compile.
"""

from fusion_alias.bench.main import main, run

__all__ = ["main", "run"]
