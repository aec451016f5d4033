// A backend's launches as torch_reduce.explain shows them: one LaunchStep a
// kernel launch, in order. The CUDA backend's typed plans, which its
// launchers read (cuda/row_plans.cuh, cuda/column_plans.cuh), describe
// themselves in these terms, so that explain prints what the launch does,
// computed by the same functions.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace torch_reduce {

struct LaunchStep {
  std::string kernel;  // the __global__ function
  std::string config;  // its template choices and per-launch shape, readable
  int64_t grid = 0;
  int block = 0;
  int64_t shared_bytes = 0;  // dynamic shared memory
  int64_t bytes_read = 0;    // of the input, or of the partials of the launch before
  int64_t bytes_written = 0; // outputs, or partials for the next launch
  bool evict_first = false;  // input loads marked evict-first
  bool early = false;        // launched before the kernel ahead of it ends (dependent_launch.cuh)
};

// Writes `name=value` pairs, comma-separated, for LaunchStep::config.
class ConfigWriter {
 public:
  template <typename T>
  ConfigWriter& operator()(const char* name, const T& value) {
    s_ << (first_ ? "" : ", ") << name << "=" << value;
    first_ = false;
    return *this;
  }
  ConfigWriter& flag(const char* name, bool on) {
    if (on) {
      s_ << (first_ ? "" : ", ") << name;
      first_ = false;
    }
    return *this;
  }
  std::string str() const { return s_.str(); }

 private:
  std::ostringstream s_;
  bool first_ = true;
};

}  // namespace torch_reduce
