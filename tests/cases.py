"""What the test files share: the dtypes the ops support and refuse, and how
parameters are named in test ids."""
import torch

FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [torch.bool]
UNSUPPORTED_DTYPES = [
    torch.complex64,
    torch.complex128,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.uint16,
    torch.uint32,
    torch.uint64,
]
C10_NAMES = {
    torch.complex64: "ComplexFloat",
    torch.complex128: "ComplexDouble",
    torch.float8_e4m3fn: "Float8_e4m3fn",
    torch.float8_e5m2: "Float8_e5m2",
    torch.uint16: "UInt16",
    torch.uint32: "UInt32",
    torch.uint64: "UInt64",
}


def _id(v):
    """A readable test id for a parameter: float32, (3,4), keepdim."""
    if isinstance(v, torch.dtype):
        return str(v).replace("torch.", "")
    if isinstance(v, str):
        return v
    return repr(v).replace(" ", "")


def dtype_name_pattern(dtype):
    """A regex matching either name of a dtype in an error: torch's (complex64) or c10's (ComplexFloat)."""
    return "(?i)(" + "|".join(sorted({_id(dtype), C10_NAMES[dtype]})) + ")"


def unsupported_input(dtype, device, shape=(4, 5)):
    """A small tensor of a dtype the ops refuse (unsigned ones from integers, the rest from floats)."""
    x = torch.randint(1, 100, shape) if dtype in (torch.uint16, torch.uint32, torch.uint64) else torch.randn(shape)
    return x.to(dtype).to(device)
