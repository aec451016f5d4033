#include "reduce_front_end.h"

#include <ATen/WrapDimUtilsMulti.h>

#include <algorithm>
#include <numeric>

namespace torch_reduce {
namespace {

bool is_kernel_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
      return true;
    default:
      return false;
  }
}

void check_dtype(const char* name, at::ScalarType t, const char* what) {
  TORCH_CHECK(is_kernel_dtype(t), "torch_reduce.", name, ": unsupported ", what,
              " dtype ", t,
              " (supported: float32, float64, float16, bfloat16, int8, uint8, "
              "int16, int32, int64, bool)");
}

// What the op returns, and what the kernel reads and writes to get there.
struct DtypePlan {
  at::ScalarType input;   // the input is cast to this first (usually a no-op)
  at::ScalarType kernel;  // the kernel's output dtype
  at::ScalarType result;  // the dtype returned to the caller
};

DtypePlan plan_dtypes(ReduceKind kind, const char* name, at::ScalarType self,
                      std::optional<at::ScalarType> requested) {
  check_dtype(name, self, "input");
  if (requested) check_dtype(name, *requested, "output");
  const bool reduced_precision = self == at::kHalf || self == at::kBFloat16;
  switch (kind) {
    case ReduceKind::Max:
    case ReduceKind::Min:
      return {self, self, self};
    case ReduceKind::Mean: {
      const at::ScalarType result = requested.value_or(self);
      TORCH_CHECK(at::isFloatingType(result), name,
                  "(): could not infer output dtype. Input dtype must be either "
                  "a floating point or complex dtype. Got: ",
                  result);
      // The kernels read half/bfloat16 and write float directly; any other
      // requested dtype is reached by casting the input first, like torch.
      if (reduced_precision && result == at::kFloat) return {self, result, result};
      return {result, result, result};
    }
    case ReduceKind::Sum: {
      if (!requested) {
        if (at::isIntegralType(self, /*includeBool=*/true)) return {self, at::kLong, at::kLong};
        return {self, self, self};
      }
      const at::ScalarType result = *requested;
      if (reduced_precision && result == at::kFloat) return {self, result, result};
      // Integers accumulate in int64; a narrower integer result is the int64
      // sum wrapped around, which is what torch returns.
      // A bool result is "any element nonzero": the input becomes bool first.
      if (at::isIntegralType(result, /*includeBool=*/true)) {
        const at::ScalarType input =
            at::isIntegralType(self, /*includeBool=*/true) && result != at::kBool ? self : result;
        return {input, at::kLong, result};
      }
      return {result, result, result};
    }
  }
  TORCH_CHECK(false, "unreachable");
}

int64_t product(at::IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

struct Group {
  int64_t size;
  int64_t stride;
  bool reduced;
};

// Merges the dims, visited in `order`, into runs (adjacent dims of the same
// kind whose memory is contiguous with respect to each other, sizes of 1
// dropped) and matches the runs against the two layouts.
std::optional<ReduceLayout> match_layout(const at::Tensor& input, const std::vector<bool>& reduced,
                                         const std::vector<int64_t>& order) {
  std::vector<Group> groups;
  for (const int64_t d : order) {
    const int64_t size = input.size(d), stride = input.stride(d);
    if (size == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduced[d] &&
        groups.back().stride == stride * size) {
      groups.back().size *= size;
      groups.back().stride = stride;
    } else {
      groups.push_back({size, stride, reduced[d]});
    }
  }
  const bool full = std::all_of(reduced.begin(), reduced.end(), [](bool r) { return r; });
  std::vector<Group> kept, red;
  for (const auto& g : groups) (g.reduced ? red : kept).push_back(g);
  if (red.size() > 1 || kept.size() > 2) return std::nullopt;
  const Group r = red.empty() ? Group{1, 1, true} : red[0];
  // Every kept dim has size 1 but the innermost dim is one of them: a single
  // column, which must be summed in the order of every other column.
  const bool single_column = kept.empty() && !reduced.empty() && !reduced.back();

  // Inner: the reduced elements of each output are contiguous.
  if (r.stride == 1 && kept.size() <= 1 && !single_column) {
    const Group k = kept.empty() ? Group{1, 0, false} : kept[0];
    return ReduceLayout{ReduceLayout::Inner, k.size, r.size, 1, k.stride, 1, full};
  }
  // Outer: the last kept dim is contiguous; the output index is
  // (first kept, last kept) in row-major order.
  if (!kept.empty() && kept.back().stride == 1) {
    const Group b = kept.size() == 2 ? kept[0] : Group{1, 0, false};
    return ReduceLayout{ReduceLayout::Outer, b.size, r.size, kept.back().size,
                        b.stride, r.stride, full};
  }
  if (single_column) {
    return ReduceLayout{ReduceLayout::Outer, 1, r.size, 1, 0, r.stride, full};
  }
  return std::nullopt;
}

std::vector<int64_t> dims_in_order(const at::Tensor& input) {
  std::vector<int64_t> order(input.dim());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// The dims from the largest stride down (ties in dim order): memory order.
std::vector<int64_t> dims_by_stride(const at::Tensor& input) {
  std::vector<int64_t> order = dims_in_order(input);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return input.stride(a) > input.stride(b); });
  return order;
}

}  // namespace

std::optional<ReduceLayout> plan_layout(const at::Tensor& input,
                                        const std::vector<bool>& reduced) {
  if (auto layout = match_layout(input, reduced, dims_in_order(input))) return layout;
  // The reduced elements of an output may be taken in any order, but the kept
  // dims' order is the output's. So where the dims in memory order keep the
  // kept dims in theirs, they are tried too: a transposed or permuted tensor
  // whose reduced dims (or all dims) form one dense block is then read in
  // place, in memory order.
  const std::vector<int64_t> order = dims_by_stride(input);
  std::vector<int64_t> kept_in_memory_order;
  for (const int64_t d : order)
    if (!reduced[d] && input.size(d) != 1) kept_in_memory_order.push_back(d);
  if (!std::is_sorted(kept_in_memory_order.begin(), kept_in_memory_order.end())) return std::nullopt;
  return match_layout(input, reduced, order);
}

at::Tensor reduce_front_end(ReduceKind kind, const char* name,
                            const at::Tensor& self, at::OptionalIntArrayRef dim,
                            bool keepdim, std::optional<at::ScalarType> dtype,
                            const std::optional<std::string>& algorithm,
                            LayoutKernel kernel) {
  const DtypePlan dtypes = plan_dtypes(kind, name, self.scalar_type(), dtype);
  const int64_t ndim = self.dim();

  // dim=None and dim=[] both reduce every dim, as in torch.
  std::vector<bool> reduced(ndim, true);
  const bool all_dims = !dim.has_value() || dim->empty();
  if (!all_dims) {
    // Raises torch's errors for out-of-range and repeated dims.
    const auto mask = at::dim_list_to_bitset(*dim, ndim);
    for (int64_t d = 0; d < ndim; ++d) reduced[d] = mask[d];
  }

  std::vector<int64_t> out_shape;
  int64_t count = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced[d]) {
      count *= self.size(d);
      if (keepdim) out_shape.push_back(1);
    } else {
      out_shape.push_back(self.size(d));
    }
  }

  // The algorithm: an explicit request must be honoured or refused; the
  // process-wide default only applies where the ladder runs.
  Algorithm algo = Algorithm::Default;
  const bool full = all_dims || std::all_of(reduced.begin(), reduced.end(), [](bool r) { return r; });
  if (algorithm) {
    algo = parse_algorithm(*algorithm);
    if (algo != Algorithm::Default) {
      TORCH_CHECK(kind == ReduceKind::Sum, "torch_reduce.", name, " takes no algorithm");
      TORCH_CHECK(self.is_cuda(), "torch_reduce.", name, ": algorithm '", *algorithm,
                  "' is a CUDA kernel; tensors on ", self.device().type(),
                  " use algorithm='default'");
      TORCH_CHECK(full, "torch_reduce.", name, ": algorithm '", *algorithm,
                  "' reduces all elements; use dim=None or algorithm='default'");
    }
  } else if (kind == ReduceKind::Sum && self.is_cuda() && full) {
    algo = environment_algorithm().value_or(Algorithm::Default);
  }

  const auto out_options = self.options().dtype(dtypes.result);
  const int64_t out_numel = product(out_shape);
  if (out_numel == 0) return at::empty(out_shape, out_options);
  if (count == 0) {
    switch (kind) {
      case ReduceKind::Sum:
        return at::zeros(out_shape, out_options);
      case ReduceKind::Mean:
        return at::full(out_shape, std::numeric_limits<double>::quiet_NaN(), out_options);
      case ReduceKind::Max:
      case ReduceKind::Min:
        TORCH_CHECK(!all_dims, name,
                    "(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument.");
        for (int64_t d = 0; d < ndim; ++d) {
          TORCH_CHECK_INDEX(!(reduced[d] && self.size(d) == 0), name,
                            "(): Expected reduction dim ", d, " to have non-zero size.");
        }
    }
  }

  at::Tensor input = self.scalar_type() == dtypes.input ? self : self.to(dtypes.input);
  auto layout = plan_layout(input, reduced);
  if (!layout) {
    // Layouts the kernels do not read directly (several separate reduced
    // blocks of dims, a strided innermost dim, ...) are copied once so that
    // the kept dims come first and the reduced dims are contiguous.
    // The reduced dims go in memory order, so that the copy reads along it.
    std::vector<int64_t> order;
    for (int64_t d = 0; d < ndim; ++d)
      if (!reduced[d]) order.push_back(d);
    for (const int64_t d : dims_by_stride(input))
      if (reduced[d]) order.push_back(d);
    input = input.permute(order).contiguous();
    std::vector<bool> permuted_reduced(ndim);
    for (int64_t d = 0; d < ndim; ++d) permuted_reduced[d] = reduced[order[d]];
    reduced = permuted_reduced;
    layout = plan_layout(input, reduced);
    TORCH_INTERNAL_ASSERT(layout.has_value() && layout->kind == ReduceLayout::Inner);
  }

  // Contiguous in the output's shape: element b * inner + c is where the
  // kernels write it.
  at::Tensor out = at::empty(out_shape, self.options().dtype(dtypes.kernel));
  kernel(kind, input, *layout, out, algo);
  return dtypes.kernel == dtypes.result ? out : out.to(dtypes.result);
}

}  // namespace torch_reduce
