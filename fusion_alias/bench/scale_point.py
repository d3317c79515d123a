"""One point of the scale bench in a process of its own.

``python -m fusion_alias.bench.scale_point KIND SIZE ALIASED`` builds the synthetic trace
(``scale.build``), measures it once (``scale.measure_synthetic``: the whole fusion pass, the gc
after it, the stages, Thunder's grouping) and prints the :class:`~fusion_alias.bench.scale.ScaleRow`
as one line of JSON, last on standard output. ``scale.run_scale`` starts one such process per
measurement (``scale.py``, Note [each point in a fresh process]).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[2] not in ("0", "1"):
        print("usage: python -m fusion_alias.bench.scale_point KIND SIZE ALIASED(0|1)", file=sys.stderr)
        return 2
    warnings.filterwarnings("ignore")  # (Thunder's import warnings: the parent reads stdout only)
    from fusion_alias.bench import scale

    kind, size, aliased = argv[0], int(argv[1]), argv[2] == "1"
    syn = scale.build(kind, size)
    row = scale.measure_synthetic(syn, aliased)
    print(json.dumps({**dataclasses.asdict(row), "build_seconds": syn.build_seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
