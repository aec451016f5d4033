"""The classic reduction ladder: torch.ops.torch_reduce.sum(x, algorithm=name) for
every ladder step, dtype, length (powers of two and not) and alignment.

Most inputs are exactly summable, so that any summation order gives the exact
total and every step can be compared exactly, floats included: integers over
their whole range (int64 accumulation wraps like torch's), bools, and floats
that are multiples of 1/4 in [-3, 3] (whole numbers for the largest sizes), for
which every partial sum stays exact in the float32 accumulator. A dropped or
repeated element then always shows. Random normal floats are checked against
the float64 sum with a tolerance.
"""
import pytest
import torch

import torch_reduce  # noqa: F401  (registers torch.ops.torch_reduce)

OPS = torch.ops.torch_reduce

LADDER = [
    "serial",
    "interleaved_divergent",
    "interleaved_strided",
    "sequential_addressing",
    "first_add_during_load",
    "unroll_last_warp",
    "complete_unroll",
    "multiple_elements_per_thread",
    "warp_shuffle",
    "warp_shuffle_vec4",
]

if not torch.cuda.is_available():
    CUDA_SKIP_REASON = "ladder kernels need a GPU: torch.cuda.is_available() is False"
elif not OPS.built_with_cuda():
    CUDA_SKIP_REASON = "torch_reduce was built without CUDA: torch.ops.torch_reduce.built_with_cuda() is False"
else:
    CUDA_SKIP_REASON = ""


def cuda_test(test):
    """Skipped, with the reason, without a GPU or a CUDA build of torch_reduce."""
    test = pytest.mark.skipif(bool(CUDA_SKIP_REASON), reason=CUDA_SKIP_REASON)(test)
    return pytest.mark.requires_cuda(test)


FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool]
DTYPES = FLOAT_DTYPES + INT_DTYPES

# Around warp (32), block (256, 1024) and tile (512, 2048) sizes, primes, and
# two sizes that take several passes.
SMALL_SIZES = [1, 2, 3, 31, 32, 33, 255, 256, 257, 511, 513, 1023, 1024, 1025, 2049, 4099, 7919, 65537]
LARGE_SIZES = [2**20 + 3, 2**22]
# x[offset:]: 0 is the allocator's alignment; 1 and 3 elements in, vector loads
# start misaligned for every dtype.
OFFSETS = [0, 1, 3]


def dtype_id(dtype):
    return str(dtype).replace("torch.", "")


def ladder_cases():
    """(algorithm, dtype, n) to test. The serial step (one GPU thread) is slow on
    large inputs and its loop does not depend on the dtype: it gets one large
    size, for one float and one integer dtype."""
    for name in LADDER:
        for dtype in DTYPES:
            sizes = SMALL_SIZES + LARGE_SIZES
            if name == "serial":
                sizes = SMALL_SIZES + ([2**20 + 3] if dtype in (torch.float32, torch.int8) else [])
            for n in sizes:
                yield pytest.param(name, dtype, n, id=f"{name}-{dtype_id(dtype)}-{n}")


def exact_input(n, dtype, offset=0):
    """x[offset:] of a fresh CUDA tensor: n elements whose sum is exact in any order."""
    total = n + offset
    if dtype == torch.bool:
        base = torch.randint(0, 2, (total,), device="cuda").bool()
    elif dtype.is_floating_point:
        # |partial sum| <= 3 n; in quarters that is 12 n, which must stay below
        # 2^24 (float32's exact integers).
        scale = 4 if 12 * n < 2**24 else 1
        base = torch.randint(-3 * scale, 3 * scale + 1, (total,), device="cuda").to(dtype) / scale
    else:
        info = torch.iinfo(dtype)
        high = info.max if dtype == torch.int64 else info.max + 1  # randint's high cannot exceed int64
        base = torch.randint(info.min, high, (total,), device="cuda", dtype=dtype)
    return base[offset:]


def exact_sum(x, dtype=None):
    """The correctly rounded sum, in the dtype torch.sum returns."""
    out_dtype = torch.sum(x[:1], dtype=dtype).dtype
    if out_dtype.is_floating_point:
        return x.double().sum().to(out_dtype)
    return torch.sum(x, dtype=dtype)


def assert_exact(got, x, what, dtype=None):
    expected = exact_sum(x, dtype)
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, torch.sum gives {expected.dtype}"
    assert got.shape == expected.shape, f"{what}: shape {tuple(got.shape)}, torch.sum gives {tuple(expected.shape)}"
    assert got.device == x.device, f"{what}: device {got.device}, input on {x.device}"
    assert torch.equal(got, expected), f"{what}: got {got.item()!r}, exact sum {expected.item()!r}"


# --------------------------------------------------------------------------- #
# Tests that run everywhere
# --------------------------------------------------------------------------- #
def test_algorithm_names_are_default_then_the_ladder():
    assert list(OPS.algorithms()) == ["default"] + LADDER


def test_unknown_algorithm_lists_the_valid_names():
    with pytest.raises(RuntimeError, match="unknown algorithm 'nope'") as error:
        OPS.sum(torch.ones(4), algorithm="nope")
    for name in ["default"] + LADDER:
        assert name in str(error.value)


@pytest.mark.parametrize("name", LADDER)
def test_ladder_algorithm_on_a_cpu_tensor_is_refused(name):
    with pytest.raises(RuntimeError, match=f"'{name}'.*CUDA"):
        OPS.sum(torch.ones(4), algorithm=name)


# --------------------------------------------------------------------------- #
# CUDA
# --------------------------------------------------------------------------- #
@cuda_test
@pytest.mark.parametrize("offset", OFFSETS, ids=lambda o: f"x[{o}:]")
@pytest.mark.parametrize("name, dtype, n", list(ladder_cases()))
def test_ladder_sum_is_exact(name, dtype, n, offset):
    x = exact_input(n, dtype, offset)
    assert_exact(OPS.sum(x, algorithm=name), x, f"{name}, {dtype_id(dtype)}, n={n}, x[{offset}:]")


@cuda_test
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float32, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("name", LADDER)
def test_ladder_every_alignment_and_short_length(name, dtype):
    # Every start within a 16-byte vector and every length up to a few
    # vectors: the head / body / tail split of warp_shuffle_vec4, and the
    # partly filled blocks of the other steps.
    lengths = list(range(1, 40)) + [63, 64, 65, 127, 128, 129]
    base = exact_input(max(lengths) + 16, dtype)
    cases = [(offset, n) for offset in range(17) for n in lengths]
    got = torch.stack([OPS.sum(base[offset : offset + n], algorithm=name) for offset, n in cases])
    expected = torch.stack([exact_sum(base[offset : offset + n]) for offset, n in cases])
    wrong = (got != expected).nonzero().flatten().tolist()
    if wrong:
        offset, n = cases[wrong[0]]
        raise AssertionError(
            f"{name}, {dtype_id(dtype)}: {len(wrong)} of {len(cases)} sums wrong; first x[{offset}:{offset + n}]: "
            f"got {got[wrong[0]].item()!r}, exact {expected[wrong[0]].item()!r}"
        )


def random_float_cases():
    for name in LADDER:
        for dtype in FLOAT_DTYPES:
            for n in [4099, 2**20 + 3]:
                if name == "serial" and n > 4099 and dtype != torch.float32:
                    continue  # slow, and the serial loop does not depend on the dtype
                yield pytest.param(name, dtype, n, id=f"{name}-{dtype_id(dtype)}-{n}")


@cuda_test
@pytest.mark.parametrize("name, dtype, n", list(random_float_cases()))
def test_ladder_random_floats_within_tolerance(name, dtype, n):
    # Values that are not exactly summable: the float64 sum, with a tolerance
    # of a few accumulator ulps of sum(|x|) plus the output's own rounding.
    x = torch.randn(n + 1, device="cuda", dtype=torch.float64 if dtype == torch.float64 else torch.float32)
    x = x.to(dtype)[1:]
    got = OPS.sum(x, algorithm=name)
    assert got.dtype == dtype
    ref = x.double().sum().item()
    magnitude = x.double().abs().sum().item()
    eps_acc = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps
    tolerance = torch.finfo(dtype).eps * abs(ref) + 8 * eps_acc * magnitude
    error = abs(got.double().item() - ref)
    assert error <= tolerance, (
        f"{name}, {dtype_id(dtype)}, n={n}: got {got.item()!r}, float64 {ref!r}, |error| {error:.3g} > {tolerance:.3g}"
    )


@cuda_test
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("name", LADDER)
def test_ladder_half_input_float_output(name, dtype):
    # dtype=torch.float32: the float accumulator is written without rounding to half.
    x = exact_input(70001, dtype, offset=1)
    got = OPS.sum(x, dtype=torch.float32, algorithm=name)
    assert_exact(got, x, f"{name}, {dtype_id(dtype)} -> float32", dtype=torch.float32)


@cuda_test
@pytest.mark.parametrize("name", LADDER)
def test_ladder_multidimensional_and_non_contiguous(name):
    x = exact_input(3 * 5 * 67, torch.float32).view(3, 5, 67)
    for what, view in [("(3, 5, 67)", x), ("transposed", x.transpose(0, 2)), ("every other column", x[:, :, ::2])]:
        assert_exact(OPS.sum(view, algorithm=name), view, f"{name}, {what}")


@cuda_test
@pytest.mark.parametrize("name", LADDER)
def test_ladder_empty_input_sums_to_zero(name):
    got = OPS.sum(torch.empty(0, device="cuda"), algorithm=name)
    assert got.dtype == torch.float32 and got.item() == 0


@cuda_test
@pytest.mark.parametrize("name", LADDER)
def test_ladder_in_a_cuda_graph(name):
    # Capture fails if a step synchronises the host or launches off the
    # current stream; a replay after an in-place update must re-read x.
    x = exact_input(4099 if name == "serial" else 300007, torch.float32, offset=1)
    OPS.sum(x, algorithm=name)  # warm up outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = OPS.sum(x, algorithm=name)
    x.copy_(exact_input(x.numel(), torch.float32))
    graph.replay()
    torch.cuda.synchronize()
    assert_exact(result, x, f"{name}, replayed graph")


@cuda_test
@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in LADDER if name != "serial"])
def test_ladder_beyond_32_bit_indices(name):
    # 2^31 + 5 bytes: element indices past int32, and a misaligned start (x[3:]).
    n = 2**31 + 5
    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info()
    if free < 2 * n:
        pytest.skip(f"needs {2 * n / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")
    x = exact_input(n, torch.uint8, offset=3)
    assert_exact(OPS.sum(x, algorithm=name), x, f"{name}, uint8, n=2^31+5, x[3:]")
