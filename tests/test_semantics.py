"""Semantics: every op gives torch's result for every argument torch takes, and torch's error
for every argument torch refuses.

Values over sizes and shapes, dims (int, negative, tuple, list, empty) and keepdim, the call
forms of the wrappers and of torch.ops, 0-dim and empty inputs (an empty reduction is 0 for
sum, NaN for mean, torch's error for amax and amin), NaN and infinities, bad dims, the result
a new tensor, and the process-wide algorithm keeping all of it. Each test takes an ``op``
(cases.OPS says what differs between the ops). Results must equal torch's in dtype, shape and
device, and in value: exactly for integer and bool results and for amax/amin, within a
tolerance of the float64 reduction for sum and mean of floats (conftest.assert_matches_reference).
"""
import pytest
import torch

import torch_reduce
from cases import (ALL_OPS, FLOAT_DTYPES, OPS, _id, op_dtype_params, raw_dims, reduce, shape_dim_ids,
                   torch_reference)

keepdims = pytest.mark.parametrize("keepdim", [False, True], ids=["nokeep", "keepdim"])
every_op_and_dtype = pytest.mark.parametrize("op,dtype", op_dtype_params())
float_dtypes = pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
every_op = pytest.mark.parametrize("op", ALL_OPS)


# --------------------------------------------------------------------------- #
# Values: full reductions, call forms, dims
# --------------------------------------------------------------------------- #
@every_op_and_dtype
@pytest.mark.parametrize("size", [1, 31, 32, 33, 1023, 1025, 4099, 65537, 2**20 + 3])
def test_full_reduction_of_every_size(device, op, dtype, size, make_input, check):
    """Sizes that straddle warp, block and vector boundaries (size 0: test_empty_reduction)."""
    x = make_input(size, dtype, device)
    check(reduce(op, x), x, op=op)


@every_op_and_dtype
@pytest.mark.parametrize("shape", [(1025, 33), (2, 3, 4, 5), (7, 1, 4099)], ids=_id)
def test_full_reduction_of_a_multidim_tensor(device, op, dtype, shape, make_input, check):
    x = make_input(shape, dtype, device)
    check(reduce(op, x), x, op=op)
    check(reduce(op, x, keepdim=True), x, op=op, keepdim=True)  # dim=None, keepdim: all dims kept as 1


@every_op_and_dtype
def test_every_way_to_name_all_dims(device, op, dtype, make_input, check):
    """No dim, dim=[] and dim=() reduce every dim, in the wrapper and the torch.ops overload."""
    x = make_input((5, 33, 7), dtype, device)
    check(reduce(op, x, keepdim=True), x, op=op, keepdim=True)
    check(OPS[op].fn(x, []), x, op=op, dim=[])
    check(OPS[op].fn(x, ()), x, op=op, dim=())
    check(OPS[op].raw(x), x, op=op)
    if not OPS[op].one_dim:
        check(OPS[op].raw(x, [0, 2], True), x, op=op, dim=(0, 2), keepdim=True)


@every_op
def test_call_forms(device, op, make_input, check):
    """The raw op and the wrapper accept the argument forms of torch's function."""
    x = make_input((3, 4, 5), torch.float32, device)
    spec = OPS[op]
    check(spec.raw(x), x, op=op)
    check(spec.raw.default(x, [1]), x, op=op, dim=1)
    check(spec.fn(x, 1), x, op=op, dim=1)
    check(spec.fn(x, dim=-1, keepdim=True), x, op=op, dim=-1, keepdim=True)
    if not spec.one_dim:
        check(spec.raw(x, [0, 2], True), x, op=op, dim=(0, 2), keepdim=True)
        check(spec.fn(x, (0, 2)), x, op=op, dim=(0, 2))
        check(spec.fn(x, [2, 0], keepdim=True), x, op=op, dim=[2, 0], keepdim=True)
    check(spec.fn(x, spec.all_dims, True), x, op=op, keepdim=True)
    if spec.takes_dtype:
        check(spec.raw(x, dtype=torch.float64), x, op=op, dtype=torch.float64)
        check(spec.fn(x, dtype=torch.float64), x, op=op, dtype=torch.float64)
        check(spec.fn(x, dim=None, keepdim=False, dtype=None), x, op=op)
    else:
        check(spec.fn(x, dim=(), keepdim=False), x, op=op, dim=())


DIM_CASES = [
    ((5,), 0),
    ((5,), -1),
    ((5,), (0,)),
    ((3, 4), 0),
    ((3, 4), 1),
    ((3, 4), -1),
    ((3, 4), -2),
    ((3, 4), (0, 1)),
    ((3, 4), (-1, -2)),
    ((3, 4), []),
    ((3, 4), ()),
    ((2, 3, 4), 1),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), [2, 0]),
    ((2, 3, 4), (1, 2)),
    ((2, 3, 4), (0, 1)),
    ((2, 3, 4, 5), (1, 3)),
    ((2, 3, 4, 5), (0, 2, 3)),
    ((2, 3, 4, 5), -3),
    ((7, 1, 5), 1),
    ((7, 1, 5), (0, 2)),
    ((1, 1), 0),
    ((33, 1025), 0),
    ((33, 1025), 1),
    ((1025, 33), 0),
    ((1025, 33), 1),
    ((4099, 3), 0),
    ((3, 4099), 1),
    ((1000, 2), 1),
    ((2, 1000), 0),
    ((5, 31, 33), (0, 2)),
    ((17, 19, 23), 1),
]


@every_op_and_dtype
@keepdims
@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=shape_dim_ids(DIM_CASES))
def test_dims(device, op, dtype, shape, dim, keepdim, make_input, check):
    x = make_input(shape, dtype, device)
    check(reduce(op, x, dim, keepdim), x, op=op, dim=dim, keepdim=keepdim)


# --------------------------------------------------------------------------- #
# 0-dim and empty inputs
# --------------------------------------------------------------------------- #
@every_op_and_dtype
@keepdims
@pytest.mark.parametrize("dim", [None, 0, -1, (0,), [], (-1,)], ids=_id)
def test_zero_dim_tensor(device, op, dtype, dim, keepdim, make_input, check):
    x = make_input((), dtype, device)
    check(reduce(op, x, dim, keepdim), x, op=op, dim=dim, keepdim=keepdim)


# Empty reductions (a reduced dim of size 0) and empty outputs (a kept dim of size 0), among them
# both at once and dims as the caller may write them (negative, in any order, a list).
EMPTY_CASES = [
    ((0,), None),
    ((0,), 0),
    ((0, 3), None),
    ((0, 3), 0),
    ((0, 3), 1),
    ((0, 3), []),
    ((3, 0), 0),
    ((3, 0), 1),
    ((3, 0), -1),
    ((2, 0, 4), (0, 2)),
    ((2, 0, 4), (0, 1)),
    ((2, 0, 4), 1),
    ((2, 0, 4), 2),
    ((2, 0, 4), []),
    ((0, 0), (0, 1)),
    ((0, 0), []),
    ((0, 0), 0),
    ((0, 0, 2), -3),
    ((2, 0, 0), (2, -2)),
    ((0, 0, 2), (2, 1, 0)),
]


def reduces_no_elements(shape, dim):
    """Whether reducing `shape` over `dim` folds empty runs: a reduced dim has size 0."""
    dims = range(len(shape)) if dim is None or dim in ([], ()) else ([dim] if isinstance(dim, int) else dim)
    return any(shape[d] == 0 for d in dims)


@every_op_and_dtype
@keepdims
@pytest.mark.parametrize("shape,dim", EMPTY_CASES, ids=shape_dim_ids(EMPTY_CASES))
def test_empty_reduction(device, op, dtype, shape, dim, keepdim, make_input, check, raises_like_torch):
    """An empty reduction is the op's value for no elements (sum 0, mean NaN) with torch's dtype
    and shape, or, for amax and amin, torch's error word for word (it names the first empty
    reduced dim as the caller wrote it). Reducing non-empty dims beside an empty one gives an
    empty result."""
    x = make_input(shape, dtype, device)
    spec = OPS[op]
    if spec.empty_raises and reduces_no_elements(shape, dim):
        raises_like_torch(lambda: reduce(op, x, dim, keepdim), lambda: torch_reference(op, x, dim, keepdim),
                          same_message=True)
        return
    out = reduce(op, x, dim, keepdim)
    check(out, x, op=op, dim=dim, keepdim=keepdim)
    if spec.empty_raises:
        assert out.numel() == 0
    elif out.numel():
        torch.testing.assert_close(out, torch.full_like(out, spec.empty_result), rtol=0, atol=0, equal_nan=True)


# --------------------------------------------------------------------------- #
# NaN and infinities
# --------------------------------------------------------------------------- #
# Values written at random places of a random input, and a NaN at the first, a middle and the
# last place.
RANDOM_SPECIALS = {
    "nan": [float("nan")],
    "inf": [float("inf")],
    "-inf": [float("-inf")],
    "inf-inf": [float("inf"), float("-inf")],
    "nan+inf": [float("nan"), float("inf")],
}
NAN_PLACES = {"nan first": lambda n: 0, "nan middle": lambda n: n // 2 + 1, "nan last": lambda n: n - 1}


@every_op
@float_dtypes
@pytest.mark.parametrize("size", [33, 1025, 65537])
@pytest.mark.parametrize("special", list(RANDOM_SPECIALS) + list(NAN_PLACES))
def test_nan_and_inf_propagate(device, op, dtype, size, special, make_input, check):
    """A NaN makes the result NaN wherever it is; infinities give torch's result (inf - inf is
    NaN for sum and mean). The same in dim reductions: only the outputs of the special values'
    rows or columns are affected."""
    x = make_input(size, dtype, device)
    if special in NAN_PLACES:
        x[NAN_PLACES[special](size)] = float("nan")
    else:
        pos = torch.randperm(size)[:2].tolist()
        for p, value in zip(pos, RANDOM_SPECIALS[special]):
            x[p] = value
    out = reduce(op, x)
    if "nan" in special and out.dtype.is_floating_point:
        assert torch.isnan(out), f"{op} of a tensor holding NaN must be NaN, got {out.item()}"
    check(out, x, op=op)
    rows = x[: size - size % 3].view(3, -1)
    check(reduce(op, rows, 1), rows, op=op, dim=1)
    check(reduce(op, rows, 0), rows, op=op, dim=0)


@every_op
@float_dtypes
def test_special_values_in_rows_and_columns(device, op, dtype, make_input, check):
    x = make_input((6, 1025), dtype, device)
    x[1, 10] = float("nan")
    x[2, 5] = float("inf")
    x[3, 1000] = float("-inf")
    x[4, 0] = float("inf")
    x[4, 1] = float("-inf")
    check(reduce(op, x, 1), x, op=op, dim=1)
    check(reduce(op, x.t(), 0), x.t(), op=op, dim=0)
    check(reduce(op, x), x, op=op)


@every_op
@float_dtypes
def test_nan_reaches_its_own_output_only(device, op, dtype, make_input, check):
    x = make_input((8, 1025), dtype, device)
    x[3, 700] = float("nan")
    x[5, 0] = float("inf")
    out = reduce(op, x, 1)
    check(out, x, op=op, dim=1)
    if out.dtype.is_floating_point:
        assert torch.isnan(out[3]) and torch.isfinite(out[[0, 1, 2, 4, 6, 7]]).all()
        # +inf is no row's minimum, and makes a variance NaN.
        assert bool(torch.isinf(out[5])) == bool(torch.isinf(torch_reference(op, x[5])))


# --------------------------------------------------------------------------- #
# Errors: torch's
# --------------------------------------------------------------------------- #
ERROR_CASES = [
    ((3, 4), 2),
    ((3, 4), -3),
    ((3, 4), (0, 2)),
    ((5,), 1),
    ((5,), -2),
    ((), 1),
    ((), -2),
    ((0, 3), 2),
    ((3, 4), (0, 0)),
    ((3, 4), (0, -2)),
    ((3, 4), (1, -1)),
    ((3, 4), [1, 1]),
    ((2, 3, 4), (2, 1, -1)),
    ((), (0, 0)),
    ((), (0, -1)),
]


@pytest.mark.parametrize("shape,dim", ERROR_CASES, ids=shape_dim_ids(ERROR_CASES))
@pytest.mark.parametrize("op,dtype", op_dtype_params(dtypes=[torch.float32, torch.int32]))
def test_bad_dim_raises_like_torch(device, op, dtype, shape, dim, make_input, raises_like_torch):
    """Out-of-range dims raise IndexError, repeated dims RuntimeError: torch's errors, from the
    wrapper and from the torch.ops overload."""
    x = make_input(shape, dtype, device)
    reference = OPS[op].reference
    raises_like_torch(lambda: OPS[op].fn(x, dim), lambda: reference(x, dim))
    raises_like_torch(lambda: OPS[op].raw(x, raw_dims(op, dim)), lambda: reference(x, dim))


# --------------------------------------------------------------------------- #
# The result
# --------------------------------------------------------------------------- #
@every_op_and_dtype
def test_result_is_a_new_tensor(device, op, dtype, make_input):
    """Output dtype/shape/device are torch's; the input is left untouched."""
    x = make_input((6, 7), dtype, device)
    before = x.clone()
    for dim in (None, 0, 1):
        out = reduce(op, x, dim)
        ref = torch_reference(op, x, dim)
        assert (out.dtype, out.shape, out.device) == (ref.dtype, ref.shape, ref.device)
        if out.numel() > 0 and x.numel() > 0:
            assert out.data_ptr() != x.data_ptr()
    assert torch.equal(x, before)


def test_mean_of_a_large_count(device, make_input, check):
    """mean divides by 2^20 + 3, in float32 and with dtype=float64."""
    x = make_input((2**20 + 3,), torch.float32, device) + 5.0
    check(torch_reduce.mean(x), x, op="mean")
    check(torch_reduce.mean(x, dtype=torch.float64), x, op="mean", dtype=torch.float64)


# --------------------------------------------------------------------------- #
# The process-wide default algorithm never changes the semantics
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name", torch_reduce.algorithms())
def test_default_algorithm_keeps_torch_semantics(device, name, make_input, check, raises_like_torch):
    """Under use_algorithm(name): full reductions of CUDA tensors may take that kernel,
    everything else (CPU tensors, dim reductions) the default path; the results and
    errors stay torch.sum's, and the setting is restored on exit."""
    before = torch_reduce.get_default_algorithm()
    x = make_input((33, 1025), torch.float32, device)
    xi = make_input((4099,), torch.int8, device)
    with torch_reduce.use_algorithm(name):
        assert torch_reduce.get_default_algorithm() == name
        check(torch_reduce.sum(x), x)
        check(torch_reduce.sum(x, (0, 1)), x, dim=(0, 1))
        check(torch_reduce.sum(x, [-1, 0], keepdim=True), x, dim=[-1, 0], keepdim=True)
        check(torch_reduce.sum(x, 1), x, dim=1)
        check(torch_reduce.sum(xi), xi)
        for bad in [(0, 1, 1), (0, -2, 1), 2, (0, 2)]:
            raises_like_torch(lambda: torch_reduce.sum(x, bad), lambda: torch.sum(x, bad))
    assert torch_reduce.get_default_algorithm() == before
