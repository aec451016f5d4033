// The CUDA backend's layout kernels over fixed and random views, on the fake
// runtime of fake_cuda_runtime.cpp, printing every launch (run.sh): built
// from two revisions, the same program must print the same lines.
#include <ATen/ATen.h>

#include <cstdio>
#include <functional>
#include <vector>
#include <random>

#include "cuda/capabilities.cuh"
#include "cuda/reduce_layout.cuh"
#include "cuda/workspace.h"
#include "op_list.h"
#include "reduce_front_end.h"

namespace torch_reduce {
namespace cuda {
// Split rows' partials and tickets: host memory (workspace.cu needs a GPU).
Workspace stream_workspace(const c10::cuda::CUDAStream&, int64_t, int64_t) {
  static unsigned int tickets[1 << 20];
  static char partials[1 << 24];
  return {tickets, partials};
}
}  // namespace cuda

template <typename Spec>
void layout_kernel(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out, const OpCall& call) {
  dispatch_unit<Spec>(input.scalar_type(), [&](auto family, auto width) {
    cuda::reduce_layout<Spec, decltype(family)::value, decltype(width)::value>(input, layout, out, call);
  });
}
}  // namespace torch_reduce

using namespace torch_reduce;

// One op through the front end, on the CUDA backend's layout kernels.
using Runner = std::function<void(const at::Tensor&, at::OptionalIntArrayRef)>;
template <typename Spec>
Runner runner(double scalar = 0) {
  return [scalar](const at::Tensor& x, at::OptionalIntArrayRef dim) {
    static const Backend backend{&torch_reduce::cuda::capabilities(), &layout_kernel<Spec>, nullptr};
    OpCall call;
    call.scalar = scalar;
    reduce_front_end(semantics_of<Spec>(), x, dim, false, std::nullopt, backend, call);
  };
}

int main(int argc, char** argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 1000;
  std::mt19937 rng(argc > 2 ? atoi(argv[2]) : 1);
  const int64_t pool[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129,
                          255, 256, 257, 500, 1000, 1024, 1025, 2048, 4096, 5000, 8192, 16384, 65536, 100000, 1 << 20};
  const at::ScalarType dtypes[] = {at::kFloat, at::kBFloat16, at::kHalf, at::kDouble, at::kInt, at::kByte};
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  // Ops of every kind of state and element step: folds of values, an exact
  // one, a logical one, a mapped one (the 2-norm), struct states, positions.
  const std::vector<Runner> ops = {runner<Sum>(), runner<Mean>(), runner<Amax>(), runner<Prod>(), runner<Any>(),
                                   runner<VectorNorm>(2.0), runner<Var>(), runner<LogSumExp>(), runner<ArgMax>()};
  const int kArgMax = static_cast<int>(ops.size()) - 1;
  const int64_t fixed[][2] = {{4096, 4096}, {65536, 1024}, {1048576, 32}, {32, 1048576}, {16384, 16384},
                              {8, 16777216}, {1048576, 8}, {3, 5000000}, {7840000, 4}, {1000000, 2},
                              {262144, 128}, {32768, 32}, {48, 100000}, {1 << 22, 2}, {3001, 999}};
  int c = 0;
  for (const auto& shape : fixed)
    for (int op = 0; op < static_cast<int>(ops.size()); ++op)
      for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf, at::kDouble})
        for (int dim = -1; dim <= 2; ++dim) {
          at::Tensor x = at::empty({shape[0], shape[1]}, at::TensorOptions().dtype(dtype));
          if (dim == 2) x = x.narrow(1, 1, shape[1] - 1);
          printf("case %d fixed op=%d dtype=%s sizes=%s dim=%d\n", c++, op, c10::toString(dtype), c10::str(x.sizes()).c_str(), dim);
          fflush(stdout);
          try {
            const std::vector<int64_t> d{dim == 2 ? 0 : dim};
            const at::OptionalIntArrayRef od = dim == 1 ? at::OptionalIntArrayRef() : at::OptionalIntArrayRef(d);
            ops[op](x, od);
          } catch (const std::exception& e) {
            printf("  error %s\n", std::string(e.what()).substr(0, 80).c_str());
          }
        }
  for (; c < cases; ++c) {
    try {
    const int ndim = 1 + pick(4);
    std::vector<int64_t> sizes;
    int64_t total;
    do {
      sizes.clear();
      total = 1;
      for (int d = 0; d < ndim; ++d) sizes.push_back(pool[pick(sizeof(pool) / sizeof(pool[0]))]), total *= sizes.back();
    } while (total > (int64_t{1} << 23));
    const int op = pick(static_cast<int>(ops.size()));
    at::ScalarType dtype = dtypes[pick(6)];
    std::vector<int64_t> base = sizes;
    const int view = pick(6);
    const int vd = pick(ndim);
    if (view == 2 || view == 3) base[vd] = base[vd] * (view == 3 ? 2 : 1) + 1;
    at::Tensor x = at::empty(base, at::TensorOptions().dtype(dtype));
    if (view == 1 && ndim > 1) x = x.transpose(vd, (vd + 1) % ndim);
    if (view == 2) x = x.narrow(vd, 1, sizes[vd]);
    if (view == 3) x = x.slice(vd, 1, base[vd], 2);
    if (view == 4) { std::vector<int64_t> s = sizes; s[vd] = 1; x = at::empty(s, x.options()).expand(sizes); }
    if (view == 5) { std::vector<int64_t> p(ndim); for (int d = 0; d < ndim; ++d) p[d] = d; std::shuffle(p.begin(), p.end(), rng); x = x.permute(p); }
    std::vector<int64_t> dims;
    const bool all = pick(5) == 0;
    if (!all) {
      for (int d = 0; d < ndim; ++d) if (pick(2)) dims.push_back(d);
      if (dims.empty()) dims.push_back(pick(ndim));
      if (op == kArgMax) dims.resize(1);
    }
    printf("case %d op=%d dtype=%s sizes=%s strides=%s offset=%lld dims=%s\n", c, op, c10::toString(dtype),
           c10::str(x.sizes()).c_str(), c10::str(x.strides()).c_str(), static_cast<long long>(x.storage_offset()),
           all ? "all" : c10::str(at::IntArrayRef(dims)).c_str());
    fflush(stdout);
    {
      const at::OptionalIntArrayRef dim = all ? at::OptionalIntArrayRef() : at::OptionalIntArrayRef(dims);
      ops[op](x, dim);
    }
    } catch (const std::exception& e) {
      printf("  error %s\n", std::string(e.what()).substr(0, 80).c_str());
    }
    fflush(stdout);
  }
}
