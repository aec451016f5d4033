// ladder_sum_cuda: checks the caller's contract and runs the chosen step.
#include "ladder.h"

#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <numeric>

#include "../device_code.h"

#include "00_serial.cuh"
#include "01_interleaved_divergent.cuh"
#include "02_interleaved_strided.cuh"
#include "03_sequential_addressing.cuh"
#include "04_first_add_during_load.cuh"
#include "05_unroll_last_warp.cuh"
#include "06_complete_unroll.cuh"
#include "07_multiple_elements_per_thread.cuh"
#include "08_warp_shuffle.cuh"
#include "09_shuffle_vec4.cuh"
#include "multi_pass.cuh"

namespace torch_reduce {

at::Tensor ladder_sum(const at::Tensor& self, bool keepdim, const DtypePlan& dtypes, Algorithm step) {
  const c10::cuda::CUDAGuard guard(self.device());
  cuda::check_device_has_code();
  const std::vector<int64_t> shape(keepdim ? self.dim() : 0, 1);
  const auto options = self.options().dtype(dtypes.result);
  if (self.numel() == 0) return at::zeros(shape, options);
  const at::Tensor cast = self.scalar_type() == dtypes.input ? self : self.to(dtypes.input);
  // Memory order: the dims from the largest stride down (a no-op copy where
  // the tensor is dense in some order).
  std::vector<int64_t> order(cast.dim());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cast.stride(a) > cast.stride(b); });
  const at::Tensor input = cast.permute(order).contiguous().view({-1});
  at::Tensor out = at::empty({}, self.options().dtype(dtypes.kernel));
  ladder_sum_cuda(input, out, step);
  const at::Tensor result = out.view(shape);
  return result.scalar_type() == dtypes.result ? result : result.to(dtypes.result);
}

void ladder_sum_cuda(const at::Tensor& input, at::Tensor& out, Algorithm algorithm) {
  TORCH_CHECK(input.is_cuda() && input.is_contiguous() && input.numel() >= 1,
              "torch_reduce: internal error: the ladder takes a contiguous CUDA tensor of at least "
              "one element, got ", input.device(), input.is_contiguous() ? "" : " non-contiguous",
              " with ", input.numel(), " elements");
  TORCH_CHECK(out.device() == input.device() && out.is_contiguous() && out.numel() == 1,
              "torch_reduce: internal error: the ladder writes one contiguous element on ",
              input.device(), ", got ", out.numel(), " on ", out.device());

  switch (algorithm) {
    case Algorithm::Serial:
      return ladder::sum_in_passes<ladder::Serial>(input, out);
    case Algorithm::InterleavedDivergent:
      return ladder::sum_in_passes<ladder::InterleavedDivergent>(input, out);
    case Algorithm::InterleavedStrided:
      return ladder::sum_in_passes<ladder::InterleavedStrided>(input, out);
    case Algorithm::SequentialAddressing:
      return ladder::sum_in_passes<ladder::SequentialAddressing>(input, out);
    case Algorithm::FirstAddDuringLoad:
      return ladder::sum_in_passes<ladder::FirstAddDuringLoad>(input, out);
    case Algorithm::UnrollLastWarp:
      return ladder::sum_in_passes<ladder::UnrollLastWarp>(input, out);
    case Algorithm::CompleteUnroll:
      return ladder::sum_in_passes<ladder::CompleteUnroll>(input, out);
    case Algorithm::MultipleElementsPerThread:
      return ladder::sum_in_passes<ladder::MultipleElementsPerThread>(input, out);
    case Algorithm::WarpShuffle:
      return ladder::sum_in_passes<ladder::WarpShuffle>(input, out);
    case Algorithm::WarpShuffleVec4:
      return ladder::sum_in_passes<ladder::WarpShuffleVec4>(input, out);
    case Algorithm::Default:
      break;
  }
  TORCH_CHECK(false, "torch_reduce: internal error: '", algorithm_name(algorithm),
              "' is not a ladder algorithm");
}

}  // namespace torch_reduce
