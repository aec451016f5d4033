#include "algorithm.h"

#include <ATen/WrapDimUtilsMulti.h>
#include <c10/util/Exception.h>

#include <cstdlib>

namespace torch_reduce {

const std::vector<std::string>& algorithm_names() {
  // Indexed by Algorithm's value.
  static const std::vector<std::string> names = {
      "default",
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
  };
  return names;
}

const std::string& algorithm_name(Algorithm algorithm) {
  return algorithm_names().at(static_cast<size_t>(algorithm));
}

Algorithm parse_algorithm(const std::string& name) {
  const auto& names = algorithm_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Algorithm>(i);
  }
  std::string valid;
  for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
  TORCH_CHECK(false, "torch_reduce: unknown algorithm '", name,
              "'; valid algorithms are: ", valid);
}

std::optional<Algorithm> environment_algorithm() {
  static const char* value = std::getenv("TORCH_REDUCE_ALGORITHM");
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_algorithm(value);
}

std::optional<Algorithm> ladder_step(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                     const std::optional<std::string>& algorithm) {
  // Whether every dim is reduced; raises torch's errors for out-of-range and
  // repeated dims. Only asked where a ladder step is in play: every other sum
  // call goes on to the front end, which checks its dims once.
  const auto reduces_every_dim = [&] {
    if (!dim.has_value() || dim->empty()) return true;
    const auto mask = at::dim_list_to_bitset(*dim, self.dim());
    for (int64_t d = 0; d < self.dim(); ++d)
      if (!mask[d]) return false;
    return true;
  };
  if (!algorithm) {
    if (!self.is_cuda()) return std::nullopt;
    const auto step = environment_algorithm();
    if (!step || *step == Algorithm::Default || !reduces_every_dim()) return std::nullopt;
    return step;
  }
  const bool full = reduces_every_dim();
  const Algorithm step = parse_algorithm(*algorithm);
  if (step == Algorithm::Default) return std::nullopt;
  TORCH_CHECK(self.is_cuda(), "torch_reduce.sum: algorithm '", *algorithm, "' is a CUDA kernel; tensors on ",
              self.device().type(), " use algorithm='default'");
  TORCH_CHECK(full, "torch_reduce.sum: algorithm '", *algorithm,
              "' reduces all elements; use dim=None or algorithm='default'");
  return step;
}

}  // namespace torch_reduce
