// Whether this library has code the current GPU can run: machine code for its
// architecture, or PTX of an older one. A GPU it was not built for gets a
// clear error here, naming the fix, instead of a launch failure.
#pragma once

namespace torch_reduce {
namespace cuda {

// Checked once per device; throws (TORCH_CHECK) where the library has no code.
void check_device_has_code();

}  // namespace cuda
}  // namespace torch_reduce
