"""The StableHLO importer's expansions of the random-number ops into accy's integer ops:
`rng_bit_generator` with the THREE_FRY and PHILOX generators as XLA computes them
(`xla/client/lib/prng.cc`; DEFAULT is THREE_FRY), and `rng` (UNIFORM, NORMAL).

A generator is a function of its state: the same state gives the same bits and the next
state on every call, on every target. `rng` has no state operand (StableHLO leaves the
generator to the implementation): accy gives each `rng` op of a module a state of its own,
fixed at import (`[number of the op, 0]`), so a program computes the same numbers on
every call (no hidden state between calls). Floats are drawn as XLA draws them: the top
mantissa bits under a biased exponent of 0 give [1, 2), less 1; NORMAL is Box-Muller.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from accy.builder import BlockBuilder, tensor_type

THREE_FRY_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
THREE_FRY_PARITY = 0x1BD11BDA
PHILOX_W32 = (0x9E3779B9, 0xBB67AE85)
PHILOX_M4X32 = (0xD2511F53, 0xCD9E8D57)
PHILOX_ROUNDS = 10


class Words:
    """Elementwise unsigned arithmetic on 1-D values of `count` elements."""

    def __init__(self, bb: BlockBuilder, count: int):
        self.bb, self.count = bb, count

    def c(self, value: int, dtype: str = "ui32") -> SSAValue:
        return self.bb.constant(tensor_type(dtype, [self.count]), value)

    def broadcast(self, scalar: SSAValue) -> SSAValue:
        """A 1-element value repeated `count` times."""
        t = scalar.type
        assert isinstance(t, TensorType)
        element = t.get_element_type()
        if t.get_shape():
            scalar = self.bb.reshape(scalar, TensorType(element, []))
        return self.bb.broadcast_in_dim(scalar, TensorType(element, [self.count]), [])

    def rotate_left(self, x: SSAValue, distance: int) -> SSAValue:
        bb = self.bb
        return bb.or_(
            bb.shift_left(x, self.c(distance)), bb.shift_right_logical(x, self.c(32 - distance))
        )

    def halves(self, x: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The low and high 32 bits of a ui64 value."""
        bb = self.bb
        high = bb.shift_right_logical(x, self.c(32, "ui64"))
        return bb.convert(x, "ui32"), bb.convert(high, "ui32")

    def join(self, low: SSAValue, high: SSAValue) -> SSAValue:
        """The ui64 value of two ui32 halves."""
        bb = self.bb
        wide = bb.shift_left(bb.convert(high, "ui64"), self.c(32, "ui64"))
        return bb.or_(bb.convert(low, "ui64"), wide)


def three_fry(w: Words, x: list[SSAValue], key: list[SSAValue]) -> list[SSAValue]:
    """Threefry-2x32 with 20 rounds (Salmon et al., SC 2011) of the counters `x` under
    `key` (each a pair of ui32 values)."""
    bb = w.bb
    ks = [key[0], key[1], bb.xor(bb.xor(key[0], key[1]), w.c(THREE_FRY_PARITY))]
    x = [bb.add(x[0], ks[0]), bb.add(x[1], ks[1])]
    for block in range(5):
        for rotation in THREE_FRY_ROTATIONS[4 * (block % 2) : 4 * (block % 2) + 4]:
            x[0] = bb.add(x[0], x[1])
            x[1] = bb.xor(x[0], w.rotate_left(x[1], rotation))
        x[0] = bb.add(x[0], ks[(block + 1) % 3])
        x[1] = bb.add(bb.add(x[1], ks[(block + 2) % 3]), w.c(block + 1))
    return x


def philox(w: Words, x: list[SSAValue], key: list[SSAValue]) -> list[SSAValue]:
    """Philox-4x32 with 10 rounds of the counters `x` (four ui32 values) under `key`."""
    bb = w.bb

    def product(value: SSAValue, factor: int) -> tuple[SSAValue, SSAValue]:
        return w.halves(bb.multiply(bb.convert(value, "ui64"), w.c(factor, "ui64")))

    for round_ in range(PHILOX_ROUNDS):
        low0, high0 = product(x[0], PHILOX_M4X32[0])
        low1, high1 = product(x[2], PHILOX_M4X32[1])
        x = [
            bb.xor(bb.xor(high1, x[1]), key[0]),
            low1,
            bb.xor(bb.xor(high0, x[3]), key[1]),
            low0,
        ]
        if round_ + 1 < PHILOX_ROUNDS:
            key = [bb.add(key[0], w.c(PHILOX_W32[0])), bb.add(key[1], w.c(PHILOX_W32[1]))]
    return x


def _counters(bb: BlockBuilder, count: int, start: SSAValue) -> SSAValue:
    """`start + [0, 1, ..., count - 1]` (ui64, wrapping)."""
    w = Words(bb, count)
    return bb.add(bb.iota(tensor_type("ui64", [count]), 0), w.broadcast(start))


def three_fry_bits(
    bb: BlockBuilder, key: SSAValue, counter: SSAValue, shape: Sequence[int], width: int
) -> tuple[SSAValue, SSAValue]:
    """`(bits of `shape`, ui32 or ui64 by `width`; the next counter)`: XLA's THREE_FRY
    (ui64 key and counter, one element each). 64-bit draws take one counter each, the
    two outputs of one counter joined (low first); 32-bit draws take one counter for two,
    the shape split in halves along its first even dim (else its largest) and each
    counter's two outputs placed side by side in the dim after it."""
    if width == 64:
        count = math.prod(shape)
        w = Words(bb, count)
        x = three_fry(
            w, list(w.halves(_counters(bb, count, counter))), list(w.halves(w.broadcast(key)))
        )
        bits = bb.reshape(w.join(x[0], x[1]), tensor_type("ui64", shape))
        return bits, bb.add(counter, Words(bb, 1).c(count, "ui64"))
    full = list(shape) or [1]
    even = [d for d, size in enumerate(full) if size % 2 == 0]
    split = even[0] if even else full.index(max(full))
    half = full[:split] + [-(-full[split] // 2)] + full[split + 1 :]
    count = math.prod(half)
    w = Words(bb, count)
    x = three_fry(
        w, list(w.halves(_counters(bb, count, counter))), list(w.halves(w.broadcast(key)))
    )
    apart = half[: split + 1] + [1] + half[split + 1 :]
    side_by_side = bb.concatenate([bb.reshape(v, tensor_type("ui32", apart)) for v in x], split + 1)
    doubled = half[:split] + [2 * half[split]] + half[split + 1 :]
    bits = bb.reshape(side_by_side, tensor_type("ui32", doubled))
    if doubled[split] != full[split]:
        bits = bb.slice(bits, [0] * len(full), full)
    bits = bb.reshape(bits, tensor_type("ui32", shape))
    return bits, bb.add(counter, Words(bb, 1).c(count, "ui64"))


def philox_bits(
    bb: BlockBuilder,
    key: SSAValue,
    counter: tuple[SSAValue, SSAValue],
    shape: Sequence[int],
    width: int,
) -> tuple[SSAValue, tuple[SSAValue, SSAValue]]:
    """`(bits of `shape`, ui32 or ui64 by `width`; the next 128-bit counter)`: XLA's PHILOX
    (ui64 key; a counter of two ui64 words, low first, one element each). A counter gives
    four 32-bit words, or two 64-bit ones (pairs joined low first), laid out in turn."""
    count = math.prod(shape)
    words = count if width == 32 else 2 * count
    blocks = -(-words // 4)
    w = Words(bb, blocks)
    low = _counters(bb, blocks, counter[0])
    carry = bb.convert(bb.compare("LT", low, w.broadcast(counter[0])), "ui64")
    high = bb.add(w.broadcast(counter[1]), carry)
    x = philox(w, [*w.halves(low), *w.halves(high)], list(w.halves(w.broadcast(key))))
    if width == 64:
        x = [w.join(x[0], x[1]), w.join(x[2], x[3])]
    unsigned = f"ui{width}"
    lanes = [bb.reshape(v, tensor_type(unsigned, [blocks, 1])) for v in x]
    flat = bb.reshape(bb.concatenate(lanes, 1), tensor_type(unsigned, [blocks * len(x)]))
    bits = bb.reshape(bb.slice(flat, [0], [count]), tensor_type(unsigned, shape))
    one = Words(bb, 1)
    next_low = bb.add(counter[0], one.c(blocks, "ui64"))
    wrapped = bb.convert(bb.compare("LT", next_low, counter[0]), "ui64")
    return bits, (next_low, bb.add(counter[1], wrapped))


def uniform_floats(bb: BlockBuilder, bits: SSAValue, width: int) -> SSAValue:
    """Floats in [0, 1) from random bits (ui32 -> f32, ui64 -> f64): the top mantissa
    bits under the exponent of 1.0, less 1."""
    count = bits.type.get_shape()[0]  # type: ignore[attr-defined]
    w = Words(bb, count)
    unsigned, name = ("ui32", "f32") if width == 32 else ("ui64", "f64")
    mantissa = 23 if width == 32 else 52
    one_bits = 0x3F800000 if width == 32 else 0x3FF0000000000000
    shifted = bb.shift_right_logical(bits, w.c(width - mantissa, unsigned))
    ones = bb.bitcast_convert(bb.or_(shifted, w.c(one_bits, unsigned)), name)
    return bb.subtract(ones, bb.constant(tensor_type(name, [count]), 1.0))


def normal_floats(bb: BlockBuilder, u1: SSAValue, u2: SSAValue) -> SSAValue:
    """Standard normal floats from two uniform draws in [0, 1) (Box-Muller; 1 - u1 keeps
    the logarithm finite)."""
    t = u1.type
    one = bb.constant(t, 1.0)  # type: ignore[arg-type]
    radius = bb.sqrt(bb.multiply(bb.constant(t, -2.0), bb.log(bb.subtract(one, u1))))  # type: ignore[arg-type]
    return bb.multiply(radius, bb.cosine(bb.multiply(bb.constant(t, 2 * math.pi), u2)))  # type: ignore[arg-type]
