"""Shared memory per block: what each kernel stages, against the per-block limit."""

import pytest
from accy.passes.shared_memory import (
    DOT_TILE,
    REDUCE_BLOCK,
    SharedMemoryExceeded,
    scan_block_size,
)

import accy


def build(kind: str):
    b = accy.Builder()
    if kind == "reduce":
        x = b.tensor("f16", [8, 100])
        fb = b.begin_function("f", [x], [b.tensor("f16", [8])])
        fb.set_location("shared.accy", 3, 5)
        fb.return_([fb.reduce("add", fb.parameter(0), [1])])
    elif kind == "scan":
        x = b.tensor("i64", [4, 70])
        fb = b.begin_function("f", [x, x], [x])
        fb.return_([fb.scan("add", fb.parameter(0), fb.parameter(1), 1)])
    else:
        lhs, rhs = b.tensor("f32", [4, 8]), b.tensor("f32", [8, 2])
        fb = b.begin_function("f", [lhs, rhs], [b.tensor("f32", [4, 2])])
        fb.return_([fb.dot_general(fb.parameter(0), fb.parameter(1), contracting=([1], [0]))])
    fb.finish()
    return b.finish()


def test_each_kernel_kind_reports_its_block_bytes():
    # reduce: 256 threads x one f32 accumulator (f16 accumulates in f32) = 1024 bytes
    assert accy.prepare(build("reduce")).shared_memory.bytes_of == {0: REDUCE_BLOCK * 4}
    # scan of width 70: a block of 128 threads x 8-byte i64 = 1024 bytes
    assert scan_block_size(70) == 128
    assert accy.prepare(build("scan")).shared_memory.bytes_of == {0: 128 * 8}
    # dot: two 16 x 16 f32 tiles = 2048 bytes
    assert accy.prepare(build("dot")).shared_memory.bytes_of == {0: 2 * DOT_TILE**2 * 4}


def test_scan_block_size_is_a_power_of_two_between_a_warp_and_the_tile():
    assert [scan_block_size(w) for w in (1, 32, 33, 1000, 5000)] == [32, 32, 64, 1024, 1024]


def test_over_the_limit_is_an_error_at_the_work_item():
    with pytest.raises(SharedMemoryExceeded) as caught:
        accy.prepare(build("reduce"), shared_limit=1000)
    assert caught.value.diagnostic() == (
        "shared.accy:3:5: error: work item 0 (reduce) needs 1024 bytes of shared memory "
        "per block, over the limit of 1000"
    )
    assert accy.prepare(build("reduce"), shared_limit=1024).shared_memory.limit == 1024
