"""The pass pauses the cyclic collector and hands its objects to the oldest generation
(executor.py, Note [the pass's objects are old at once]), leaving the collector as it found it."""

import gc

from fusion_alias.executor import _gc_paused


def test_collector_enabled_again_and_young_generation_emptied():
    assert gc.isenabled()
    with _gc_paused():
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]  # (containers the young generation counts)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    # in the oldest generation at once: not walked by a young collection first (which would move them to the next)
    oldest = {id(x) for x in gc.get_objects(generation=2)}
    assert all(id(x) in oldest for x in made)


def test_cycles_made_in_the_pass_are_still_collected():
    with _gc_paused():
        a = []
        a.append(a)
    del a
    assert gc.collect() >= 1


def test_someone_elses_frozen_objects_stay_frozen():
    kept = [[i] for i in range(10)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with _gc_paused():
            [[i] for i in range(100)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
    del kept


def test_a_paused_collector_stays_paused():
    gc.disable()
    try:
        with _gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
