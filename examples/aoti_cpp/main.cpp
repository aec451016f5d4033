// Runs an AOTInductor package that calls torch_reduce's ops, from C++ with no Python code.
//
//   every_op <package.pt2> <torch_reduce op library> [rows cols]
//
// The package calls each torch_reduce op by name (torch_reduce::sum, ...) through the dispatcher,
// so the op library must be loaded, and its registrations run, before the package is loaded:
// otherwise the loader stops with "Could not find schema for torch_reduce::sum". The library
// today is the Python extension module torch_reduce/_C*.so; docs/DEPLOY.md says what it needs
// in a process without Python (libtorch_python.so and libpython, which this program is linked
// with) and what a Python-free op library would change.
//
// The package's results are checked against the same ops called directly through the
// dispatcher, with the arguments export_model.py's model gives them: the same kernels, so the
// same bits.
#include <dlfcn.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

namespace {

// Loads the op library; its static initialisers register torch_reduce's schemas and kernels.
// RTLD_NOW: a missing symbol is reported here, not at the first call.
void load_op_library(const std::string& path) {
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::cerr << "cannot load the op library " << path << ": " << dlerror() << "\n";
    std::exit(2);
  }
}

// torch.ops.torch_reduce.<name>(args...), boxed: no C++ signature to spell out. Its results
// (two for var_mean and std_mean) are appended to `results`.
void call_op(std::vector<at::Tensor>& results, const char* name, std::vector<c10::IValue> args) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
  op.callBoxed(args);
  for (const c10::IValue& result : args) results.push_back(result.toTensor());
}

int run(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::cerr << "usage: " << argv[0] << " <package.pt2> <torch_reduce op library> [rows cols]\n";
    return 2;
  }
  load_op_library(argv[2]);
  const int64_t rows = argc == 5 ? std::atoll(argv[3]) : 5;
  const int64_t cols = argc == 5 ? std::atoll(argv[4]) : 7;

  torch::inductor::AOTIModelPackageLoader package(argv[1]);
  // The package was compiled for one device type: "cpu", or "cuda" for export_model.py --device cuda.
  const at::Device device(package.get_metadata().at("AOTI_DEVICE_KEY"));
  const at::Tensor x = at::randn({rows, cols}, at::TensorOptions().device(device));
  const std::vector<at::Tensor> outputs = package.run({x});

  const c10::IValue none;
  std::vector<at::Tensor> expected;
  call_op(expected, "torch_reduce::sum", {x, std::vector<int64_t>{1}, false, none, none});
  call_op(expected, "torch_reduce::mean", {x, std::vector<int64_t>{-1}, true, none});
  call_op(expected, "torch_reduce::amax", {x, std::vector<int64_t>{0}, false});
  call_op(expected, "torch_reduce::amin", {x, std::vector<int64_t>{0, 1}, false});
  call_op(expected, "torch_reduce::sum", {x, none, false, at::ScalarType::Double, none});
  call_op(expected, "torch_reduce::prod", {x, std::vector<int64_t>{1}, false, none});
  call_op(expected, "torch_reduce::any", {x, std::vector<int64_t>{0}, false});
  call_op(expected, "torch_reduce::all", {x, std::vector<int64_t>{0, 1}, false});
  call_op(expected, "torch_reduce::vector_norm", {x, at::Scalar(3), std::vector<int64_t>{1}, false, none});
  call_op(expected, "torch_reduce::var", {x, std::vector<int64_t>{1}, false, 0.0});
  call_op(expected, "torch_reduce::std", {x, std::vector<int64_t>{0, 1}, true, 1.0});
  call_op(expected, "torch_reduce::logsumexp", {x, std::vector<int64_t>{1}, false});
  call_op(expected, "torch_reduce::var_mean", {x, std::vector<int64_t>{0}, false, 1.0});
  call_op(expected, "torch_reduce::std_mean", {x, std::vector<int64_t>{1}, true, 0.0});
  call_op(expected, "torch_reduce::argmax", {x, std::vector<int64_t>{1}, false});
  call_op(expected, "torch_reduce::argmin", {x, none, true});
  const char* names[] = {"sum(x, 1)", "mean(x, -1, keepdim)", "amax(x, 0)", "amin(x, (0, 1))",
                         "sum(x, dtype=float64)", "prod(x, 1)", "any(x, 0)", "all(x, (0, 1))",
                         "vector_norm(x, 3, 1)", "var(x, 1, correction=0)", "std(x, (0, 1), keepdim)",
                         "logsumexp(x, 1)", "var_mean(x, 0): var", "var_mean(x, 0): mean",
                         "std_mean(x, 1, correction=0, keepdim): std", "std_mean(x, 1, correction=0, keepdim): mean",
                         "argmax(x, 1)", "argmin(x, keepdim)"};

  bool ok = outputs.size() == expected.size();
  for (size_t i = 0; ok && i < outputs.size(); ++i) {
    const bool same = outputs[i].dtype() == expected[i].dtype() && outputs[i].sizes() == expected[i].sizes() &&
                      at::equal(outputs[i], expected[i]);
    std::cout << names[i] << ": " << outputs[i].sizes() << " " << outputs[i].dtype()
              << (same ? "  equal to the op called directly" : "  DIFFERS from the op called directly") << "\n";
    ok = ok && same;
  }
  std::cout << (ok ? "OK" : "FAILED") << ": " << rows << "x" << cols << " input on " << device << "\n";
  return ok ? 0 : 1;
}

}  // namespace

// The package and the ops report errors as exceptions (a missing op: c10::Error from the loader;
// an op's own error, such as amax over an empty dim: std::runtime_error from run).
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const c10::Error& e) {
    std::cerr << "error: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
