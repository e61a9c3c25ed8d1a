"""`convolution.tiled` (CUDA): one block per 16 x 16 tile of (output positions, output
features) walks the window positions and input features in steps of 16, staging input and
kernel tiles in shared memory (the input read in place: no workspace)."""

from accy.passes.families.family import ExpressionFamily

FAMILY = ExpressionFamily.of("convolution.tiled", ["convolution"], source=__name__)
