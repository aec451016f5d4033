"""Case tables and helpers that several test files share (and benchmarks/probes/gathered_rows.py,
which imports rows_copy): the dense narrow columns of the flat column pass, and the copy that
gathered rows replace."""

# Dense narrow columns of 4 MiB or more, whose first pass reads the rows as one flat run
# (column_flat_kernel.cuh): odd column counts (items of one or two 16- or 32-bit elements), rows
# padded by less than a vector (x[..., 1:] and x[..., :-1] of a tensor one column wider; the first
# also starts the run before the view), batches of such rows, and last chunks of 33 rows
# (700001), one (160001, 40001), none (65536) and 63 (65599). Layouts the kernel does not take (a
# batch stride of no whole vectors, items of 8 bytes, rows of one item, one-byte and 8-byte
# elements) give the same results.
FLAT_COLUMN_SHAPES = [(700001, 3), (160001, 15), (65536, 49), (65599, 33), (8, 40001, 7)]
FLAT_VIEWS = {"dense": lambda t: t, "first column cut": lambda t: t[..., 1:], "last column cut": lambda t: t[..., :-1]}


def flat_columns_input(shape, view, dtype, device, make_input):
    """FLAT_VIEWS[view] of a fresh input, `shape` once viewed."""
    wider = shape[:-1] + (shape[-1] + (view != "dense"),)
    return FLAT_VIEWS[view](make_input(wider, dtype, device))


def rows_copy(x, dims):
    """x with its kept dims first and its reduced dims after them in memory order, made
    contiguous (the copy that gathered rows replace), and the dims it reduces."""
    reduced = range(x.dim()) if dims is None else [d % x.dim() for d in dims]
    kept = [d for d in range(x.dim()) if d not in reduced]
    by_stride = sorted(reduced, key=lambda d: -x.stride(d))
    return x.permute(kept + by_stride).contiguous(), tuple(range(len(kept), x.dim()))

