"""The CPU target's kernel lowerings, one module per kernel kind (`accy.passes.lower.cpu`
drives them; its docstring says what each kind's loops are).

Each kind module holds one `CpuKernelPattern` per lowering and the free functions it
calls, which read everything through an explicit `KernelContext` (`context`): the
kernel, the function being lowered (its constants and row count) and the CPU's features.

- `context`: `KernelContext`, `CpuKernelPattern` and the loop builders every kind shares;
- `elementwise`: fused elementwise/broadcast/reshape groups;
- `layout`: transpose, iota, concatenate;
- `scatter`: scatter and in-place dynamic_update_slice;
- `reduction`: reduce (blocked, split into chunks) and fold;
- `scan`: scan;
- `dot`: dot_general with its prologue and epilogue (loops; `cpu_dot`'s register tiles);
- `attention`: softmax(Q K^T) V one score row at a time;
- `convolution`: convolutions (register tiles, else a window loop per element);
- `window`: reduce_window and select_and_scatter (and convolution kernels, by `convolution`);
- `sort`: sort and top-k.
"""
