"""Writes the AOTInductor package that main.cpp runs: a model that calls every op of torch_reduce,
exported with dynamic rows and columns and compiled ahead of time for the CPU (or --device cuda).

    python examples/aoti_cpp/export_model.py build/aoti_cpp/every_op.pt2 [--device cuda]

The package holds compiled code for the model and, for each torch_reduce op, a call by name
(torch_reduce::sum, ...) that the runtime resolves in the dispatcher: the process that runs it must
have loaded torch_reduce's op library first (docs/DEPLOY.md). tests/test_export.py compiles this
model too, and runs main.cpp on the package."""
import argparse

import torch
import torch._inductor

import torch_reduce


class EveryOp(torch.nn.Module):
    """Each op once in a common form (var_mean's and std_mean's two results each), and sum with
    dtype= over every dim. main.cpp calls the same
    ops with the same arguments through the dispatcher and compares: keep the two in step."""

    def forward(self, x):
        return (
            torch_reduce.sum(x, 1),
            torch_reduce.mean(x, -1, keepdim=True),
            torch_reduce.amax(x, 0),
            torch_reduce.amin(x, (0, 1)),
            torch_reduce.sum(x, dtype=torch.float64),
            torch_reduce.prod(x, 1),
            torch_reduce.any(x, 0),
            torch_reduce.all(x, (0, 1)),
            torch_reduce.vector_norm(x, 3, 1),
            torch_reduce.var(x, 1, correction=0),
            torch_reduce.std(x, (0, 1), keepdim=True),
            torch_reduce.logsumexp(x, 1),
            *torch_reduce.var_mean(x, 0),
            *torch_reduce.std_mean(x, 1, correction=0, keepdim=True),
            torch_reduce.argmax(x, 1),
            torch_reduce.argmin(x, keepdim=True),
        )


def export(device: str = "cpu") -> torch.export.ExportedProgram:
    """EveryOp for any (rows, cols) input of float32 on `device`."""
    example = torch.randn(8, 33, device=device)
    rows, cols = torch.export.Dim("rows"), torch.export.Dim("cols")
    return torch.export.export(EveryOp(), (example,), dynamic_shapes={"x": {0: rows, 1: cols}})


def compile_package(path: str, device: str = "cpu") -> str:
    """Compiles EveryOp ahead of time into the package `path` (torch >= 2.6); returns its path."""
    return torch._inductor.aoti_compile_and_package(export(device), package_path=path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="the .pt2 file to write")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: the package runs on this device type only")
    args = parser.parse_args()
    print(f"wrote {compile_package(args.package, args.device)}")


if __name__ == "__main__":
    main()
