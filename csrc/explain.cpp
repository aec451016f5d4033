#include "explain.h"

#include <map>
#include <sstream>
#include <vector>

#include "op_list.h"
#include "reduce_front_end.h"

namespace torch_reduce {
namespace {

std::map<c10::DeviceType, BackendDescription>& descriptions() {
  static std::map<c10::DeviceType, BackendDescription> table;
  return table;
}

// One launch, as the recording kernel saw it.
struct Step {
  std::vector<int64_t> sizes, strides;
  at::ScalarType in_dtype, out_dtype;
  bool in_place;  // reads the op's input (a view of it), not a copy or a partial
  ReduceLayout layout;
  bool permuted_output;
  std::optional<std::vector<LaunchStep>> launches;  // nullopt: not planned here
};

// The recorder of the call being explained (explain runs on one thread).
thread_local std::vector<Step>* recorder = nullptr;
thread_local const at::Tensor* explained_input = nullptr;
thread_local LayoutPlanner planner = nullptr;

void record(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out, const OpCall& call) {
  recorder->push_back({input.sizes().vec(), input.strides().vec(), input.scalar_type(), out.scalar_type(),
                       input.is_alias_of(*explained_input), layout, !out.is_contiguous(),
                       planner ? planner(input, layout, out, call) : std::nullopt});
}

void write_string(std::ostringstream& s, const std::string& text) {
  s << "\"";
  for (const char c : text) s << (c == '"' || c == '\\' ? "\\" : "") << c;
  s << "\"";
}

void write_launches(std::ostringstream& s, const std::vector<LaunchStep>& launches) {
  s << "[";
  for (size_t i = 0; i < launches.size(); ++i) {
    const LaunchStep& l = launches[i];
    s << (i ? ", " : "") << "{\"kernel\": ";
    write_string(s, l.kernel);
    s << ", \"config\": ";
    write_string(s, l.config);
    s << ", \"grid\": " << l.grid << ", \"block\": " << l.block << ", \"shared_bytes\": " << l.shared_bytes
      << ", \"bytes_read\": " << l.bytes_read << ", \"bytes_written\": " << l.bytes_written
      << ", \"evict_first\": " << (l.evict_first ? "true" : "false")
      << ", \"early\": " << (l.early ? "true" : "false") << "}";
  }
  s << "]";
}

const char* kind_name(ReduceLayout::Kind kind) {
  switch (kind) {
    case ReduceLayout::Inner:
      return "rows";
    case ReduceLayout::Outer:
      return "columns";
    case ReduceLayout::Gather:
      return "gathered rows";
  }
  return "?";
}

void write_list(std::ostringstream& s, at::IntArrayRef values) {
  s << "[";
  for (size_t i = 0; i < values.size(); ++i) s << (i ? ", " : "") << values[i];
  s << "]";
}

void write_runs(std::ostringstream& s, const Runs& runs) {
  write_list(s, at::IntArrayRef(runs.sizes, runs.count));
  s << ", \"strides\": ";
  write_list(s, at::IntArrayRef(runs.strides, runs.count));
}

std::string to_json(const DtypePlan& dtypes, const std::vector<Step>& steps, const BackendDescription& backend,
                    c10::DeviceType device) {
  std::ostringstream s;
  s << "{\"device\": \"" << c10::DeviceTypeName(device, /*lower_case=*/true) << "\", \"input_dtype\": \""
    << dtypes.input << "\", \"kernel_dtype\": \"" << dtypes.kernel << "\", \"result_dtype\": \"" << dtypes.result
    << "\", \"steps\": [";
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    const ReduceLayout& l = step.layout;
    const int64_t element_bytes = c10::elementSize(step.in_dtype);
    s << (i ? ", " : "") << "{\"reads\": \"" << (step.in_place ? "input in place" : "copy or partial")
      << "\", \"sizes\": ";
    write_list(s, step.sizes);
    s << ", \"strides\": ";
    write_list(s, step.strides);
    s << ", \"dtype\": \"" << step.in_dtype << "\", \"layout\": \"" << kind_name(l.kind) << "\", \"full\": "
      << (l.full ? "true" : "false") << ", \"batch\": " << l.batch << ", \"reduce\": " << l.reduce
      << ", \"inner\": " << l.inner << ", \"batch_stride\": " << l.batch_stride
      << ", \"reduce_stride\": " << l.reduce_stride;
    if (l.kind == ReduceLayout::Gather) {
      s << ", \"batch_runs\": {\"sizes\": ";
      write_runs(s, l.batch_runs);
      s << "}, \"reduce_runs\": {\"sizes\": ";
      write_runs(s, l.reduce_runs);
      s << "}";
    }
    if (l.column_runs.count > 0) {
      s << ", \"column_runs\": {\"sizes\": ";
      write_runs(s, l.column_runs);
      s << "}";
    }
    s << ", \"kernel\": \"" << backend.kernel_for(l, element_bytes) << "\", \"bytes_read\": "
      << l.batch * l.reduce * l.inner * element_bytes << ", \"outputs\": " << l.batch * l.inner
      << ", \"output_dtype\": \"" << step.out_dtype << "\", \"permuted_output\": "
      << (step.permuted_output ? "true" : "false") << ", \"launches\": ";
    if (step.launches) {
      write_launches(s, *step.launches);
    } else {
      s << "null";
    }
    s << "}";
  }
  s << "]}";
  return s.str();
}

}  // namespace

void describe_backend(c10::DeviceType device, const BackendDescription& description) {
  descriptions()[device] = description;
}

std::string explain(const at::Tensor& self, const std::string& op, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, const std::optional<std::string>& device) {
  const c10::DeviceType device_type = device ? c10::Device(*device).type() : self.device().type();
  const auto described = descriptions().find(device_type);
  TORCH_CHECK(described != descriptions().end(), "torch_reduce.explain: this build has no ",
              c10::DeviceTypeName(device_type, true), " backend");
  const BackendDescription& backend = described->second;

  const at::Tensor meta = at::empty_strided(self.sizes(), self.strides(), self.options().device(at::kMeta));
  std::vector<Step> steps;
  recorder = &steps;
  explained_input = &meta;
  const Backend recording{backend.caps, &record, nullptr};
  std::optional<DtypePlan> dtypes;
  try {
#define TORCH_REDUCE_EXPLAIN(name, Spec, families)                                  \
  if (op == Spec::kName) {                                                          \
    const auto found = backend.planners.find(Spec::kName);                          \
    planner = found == backend.planners.end() ? nullptr : found->second;            \
    dtypes = Spec::dtypes(self.scalar_type(), dtype);                               \
    reduce_front_end(semantics_of<Spec>(), meta, dim, keepdim, dtype, recording);   \
  }
    TORCH_REDUCE_FOR_EACH_OP(TORCH_REDUCE_EXPLAIN)
#undef TORCH_REDUCE_EXPLAIN
  } catch (...) {
    recorder = nullptr;
    explained_input = nullptr;
    planner = nullptr;
    throw;
  }
  recorder = nullptr;
  explained_input = nullptr;
  planner = nullptr;
  TORCH_CHECK(dtypes.has_value(), "torch_reduce.explain: unknown op '", op, "'");
  return to_json(*dtypes, steps, backend, device_type);
}

}  // namespace torch_reduce
