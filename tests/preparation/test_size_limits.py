"""Sizes beyond what accy can address are refused with a located error (they used to raise
xDSL's VerifyException from the i64 `accy.arena_size` attribute)."""

from __future__ import annotations

import pytest

import accy
from accy.diagnostics import AccyError


def program(tensor: str) -> str:
    return (
        f"func.func @f(%a: {tensor}) -> {tensor} {{\n"
        f"  %0 = accy.add %a, %a : {tensor}\n"
        f"  func.return %0 : {tensor}\n}}\n"
    )


@pytest.mark.parametrize(
    "tensor,size",
    [
        ("tensor<4611686018427387904xf32>", 2**64),
        ("tensor<2305843009213693952x4xf32>", 2**65),
        ("tensor<?x4611686018427387904xf32>", 2**64),
    ],
)
def test_a_tensor_beyond_the_address_space_is_refused(tensor: str, size: int) -> None:
    module = accy.parse(program(tensor), filename="big.mlir")
    with pytest.raises(AccyError) as error:
        accy.prepare(module)
    assert error.value.diagnostic() == (
        f"big.mlir:1:1: error: 'func.func' op argument #0 of type {tensor} takes {size} bytes; "
        "accy addresses at most 281474976710656 bytes (2**48)"
    )


def test_an_intermediate_beyond_the_address_space_is_refused() -> None:
    text = (
        "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = accy.broadcast_in_dim %a, dims = [1] : (tensor<2xf32>) -> "
        "tensor<140737488355328x2xf32>\n"
        "  func.return %a : tensor<2xf32>\n}\n"
    )
    with pytest.raises(AccyError, match=r"big.mlir:2:3: error: 'accy.broadcast_in_dim' op result"):
        accy.prepare(accy.parse(text, filename="big.mlir"))


def test_an_arena_beyond_the_address_space_is_refused() -> None:
    module = accy.parse(program("tensor<?x1099511627776xf32>"), filename="rows.mlir")
    with pytest.raises(AccyError) as error:
        accy.prepare(module, rows=[1024], target="cuda")  # a device arena holds every buffer
    message = error.value.diagnostic()
    assert message.startswith("rows.mlir:1:1: error: the arena of @f needs ")
    assert message.endswith("bytes; accy addresses at most 281474976710656 bytes (2**48) per arena")
