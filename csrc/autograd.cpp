// Autograd for every op of the op list, in C++ so that a call that needs no
// gradient costs no Python (a Python autograd kernel would be entered on
// every call). The formulas are the ops objects' (backward, tangent); this
// file only saves what they need and routes the modes.
//
// It works as ATen's generated kernels (VariableType) do: the op runs below
// autograd, and where its input needs a gradient the result gets a node of
// its own (Backward<Spec>) as its grad_fn. Not a torch::autograd::Function:
// torch.func's transforms (grad, vjp, jacrev) refuse those, while a plain
// node is what they handle for every ATen op (functorch wraps the tensors and
// runs this kernel once per level). Backward uses differentiable ATen ops, so
// double backward works.
//
// Forward mode (torch.autograd.forward_ad, torch.func.jvp): the kernels below
// this key see no tangents, so each op sets its result's tangent here
// (without it the tangent was silently dropped: a zero jvp).
//
// Every op's arguments begin with self; DimArg and ScalarArg (gradient.h)
// say where dim, keepdim and the op's scalar argument are.
#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>
#include <torch/version.h>

// Compiled autograd (torch._dynamo.config.compiled_autograd) takes a C++ node
// that describes itself (compiled_args) and hands its backward to Python as a
// function of IValues (apply_with_saved). That protocol is recent and still
// moving; it is compiled from torch 2.13, the oldest release this project
// has built and tested it against. Before, compiled autograd refuses these
// nodes ("compiled_args not implemented") and plain autograd is unchanged.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13)
#define TORCH_REDUCE_COMPILED_AUTOGRAD 1
#include <torch/csrc/dynamo/compiled_autograd.h>
#endif

#include <algorithm>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

#include "op_handles.h"
#include "op_list.h"

namespace torch_reduce {
namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;
#ifdef TORCH_REDUCE_COMPILED_AUTOGRAD
using torch::dynamo::autograd::CompiledNodeArgs;
using torch::dynamo::autograd::IValuePacker;
using torch::dynamo::autograd::PackedArgs;
using torch::dynamo::autograd::SwapSavedVariables;
#endif

// The reduced dims, ascending; every dim for dim=None or dim=[].
std::vector<int64_t> reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  std::vector<int64_t> dims;
  const bool all_dims = !dim.has_value() || dim->empty();
  const auto mask = all_dims ? std::bitset<at::dim_bitset_size>() : at::dim_list_to_bitset(*dim, self.dim());
  for (int64_t d = 0; d < self.dim(); ++d)
    if (all_dims || mask[d]) dims.push_back(d);
  return dims;
}

// The op called with `input` in place of the first argument.
template <typename Spec, typename Tuple, size_t... I>
auto call_with_input(const at::Tensor& input, const Tuple& args, std::index_sequence<I...>) {
  return op_handle<Spec>().call(input, std::get<I + 1>(args)...);
}

// An op's results: one tensor, or a tuple of them (var_mean's variance and
// mean), each the node's output of its index.
template <typename Result>
struct Results {
  static constexpr size_t kCount = 1;
  static at::Tensor& at(Result& result, size_t) { return result; }
};
template <typename... T>
struct Results<std::tuple<T...>> {
  static constexpr size_t kCount = sizeof...(T);
  static at::Tensor& at(std::tuple<T...>& result, size_t i) {
    return std::apply(
        [i](auto&... each) -> at::Tensor& {
          at::Tensor* all[] = {&each...};
          return *all[i];
        },
        result);
  }
};

// A new node, owned the way the torch it is built against owns nodes: torch
// 2.4 shares them (std::shared_ptr, freed through deleteNode, which frees a
// long chain of nodes without deep recursion); later releases count
// references in the node itself (c10::intrusive_ptr).
template <typename T>
auto make_node() {
  if constexpr (std::is_base_of_v<c10::intrusive_ptr_target, Node>) return c10::make_intrusive<T>();
  else return std::shared_ptr<T>(new T(), [](T* node) { deleteNode(node); });
}

// The releases with torch.autograd.graph.node_creation_hook run its callbacks
// where a kernel attaches its node, once the node is complete (as ATen's do).
template <typename Ptr>
void node_created([[maybe_unused]] const Ptr& node) {
#if __has_include(<torch/csrc/autograd/node_creation_hook.h>)
  torch::autograd::fire_node_creation_hooks(node);
#endif
}

// The backward of one call: what Gradient needs of the call, and the input
// and (first) result for ops with kBackwardSavesTensors (left empty otherwise).
template <typename Spec>
struct Backward : public Node {
  std::vector<int64_t> dims;
  bool keepdim = false;
  std::vector<int64_t> sizes;
  at::ScalarType dtype = at::kFloat;
  double scalar = 0;
  SavedVariable input;
  SavedVariable result;

  std::string name() const override { return std::string("torch_reduce::") + Spec::kName + "Backward"; }

  variable_list apply(variable_list&& grads) override {
    // Against release_variables from another thread (Node's rule for saved variables).
    std::lock_guard<std::mutex> lock(mutex_);
    return gradient(grads, task_should_compute_output(0), dims, keepdim, sizes, dtype, scalar, input.unpack(),
                    result.unpack(getptr()));
  }

  // The backward as a function of the call's values alone: apply's, and
  // compiled autograd's.
  static variable_list gradient(const variable_list& grads, bool needed, std::vector<int64_t> dims, bool keepdim,
                                std::vector<int64_t> sizes, at::ScalarType dtype, double scalar,
                                at::Tensor input, at::Tensor result) {
    variable_list out(1);
    // An undefined gradient is a zero one, and so is the input's where
    // every result's is.
    const bool any_defined = std::any_of(grads.begin(), grads.end(), [](const at::Tensor& g) { return g.defined(); });
    if (!any_defined || !needed) return out;
    Gradient g{grads[0], std::move(dims), keepdim, std::move(sizes), dtype, scalar};
    g.input = std::move(input);
    g.result = std::move(result);
    if (grads.size() > 1) g.second_grad = grads[1];
    out[0] = Spec::backward(g);
    return out;
  }

#ifdef TORCH_REDUCE_COMPILED_AUTOGRAD
  // What compiled autograd's cache keys on, and the saved tensors it lifts
  // into its graph.
  void compiled_args(CompiledNodeArgs& args) const override {
    args.collect(dims);
    args.collect(keepdim);
    args.collect(sizes);
    args.collect(dtype);
    args.collect(scalar);
    args.collect(input, /*is_output=*/false);
    args.collect(result, /*is_output=*/true);
  }

  // Puts a call of gradient() into compiled autograd's graph, as ATen's
  // generated nodes do: the function is bound to Python once, and each
  // call passes the node's values as IValues.
  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override {
    saved.before(input);
    saved.before(result);
    const auto& python = torch::dynamo::autograd::getPyCompilerInterface();
    static std::once_flag bound;
    std::call_once(bound, [&] {
      const std::vector<at::TypePtr> schema = {
          IValuePacker<bool>::packed_type(),
          IValuePacker<std::vector<int64_t>>::packed_type(),
          IValuePacker<bool>::packed_type(),
          IValuePacker<std::vector<int64_t>>::packed_type(),
          IValuePacker<at::ScalarType>::packed_type(),
          IValuePacker<double>::packed_type(),
          IValuePacker<std::optional<at::Tensor>>::packed_type(),
          IValuePacker<std::optional<at::Tensor>>::packed_type(),
      };
      python->bind_function(saved.get_py_compiler(), functional_name(), &gradient_of_ivalues, schema);
    });
    PackedArgs packed;
    packed.pack(task_should_compute_output(0));
    packed.pack(dims);
    packed.pack(keepdim);
    packed.pack(sizes);
    packed.pack(dtype);
    packed.pack(scalar);
    packed.pack(optional_tensor(input.unpack()));
    packed.pack(optional_tensor(result.unpack(getptr())));
    const auto metadata = IValuePacker<std::vector<std::optional<torch::autograd::InputMetadata>>>::pack(
        torch::dynamo::autograd::get_input_metadata(next_edges()));
    variable_list out =
        python->call_function(saved.get_py_compiler(), "apply_functional", functional_name(), grads, packed.vec(),
                              metadata);
    saved.after(input);
    saved.after(result);
    return out;
  }

  // A Python identifier: the graph's code calls the function by it.
  static std::string functional_name() { return std::string("torch_reduce_") + Spec::kName + "_backward"; }

  static std::optional<at::Tensor> optional_tensor(at::Tensor t) {
    if (!t.defined()) return std::nullopt;
    return t;
  }

  static variable_list gradient_of_ivalues(const variable_list& grads, const std::vector<c10::IValue>& values) {
    PackedArgs packed(values);
    const bool needed = packed.unpack<bool>();
    auto dims = packed.unpack<std::vector<int64_t>>();
    const bool keepdim = packed.unpack<bool>();
    auto sizes = packed.unpack<std::vector<int64_t>>();
    const auto dtype = packed.unpack<at::ScalarType>();
    const double scalar = packed.unpack<double>();
    auto input = packed.unpack<std::optional<at::Tensor>>();
    auto result = packed.unpack<std::optional<at::Tensor>>();
    return gradient(grads, needed, std::move(dims), keepdim, std::move(sizes), dtype, scalar,
                    input.value_or(at::Tensor()), result.value_or(at::Tensor()));
  }
#endif

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    input.reset_data();
    result.reset_data();
  }
};

template <typename Spec, typename Signature = typename Spec::Signature>
struct Autograd;

template <typename Spec, typename Result, typename... Args>
struct Autograd<Spec, Result(Args...)> {
  using Rest = std::make_index_sequence<sizeof...(Args) - 1>;
  static constexpr size_t kDim = DimArg<Spec>::value;

  template <typename Tuple>
  static double scalar_of(const Tuple& args) {
    if constexpr (ScalarArg<Spec>::value >= 0) return scalar_value(std::get<ScalarArg<Spec>::value>(args));
    else return 0;
  }

  // The op's result for an input without a tangent, with its backward node
  // where the input needs a gradient and the result's dtype can have one (an
  // integer sum of a float input gives a result without a gradient, where
  // torch.sum raises).
  template <typename Tuple>
  static Result primal_result(const at::Tensor& input, const Tuple& args) {
    Result result;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      result = call_with_input<Spec>(input, args, Rest{});
    }
    const at::Tensor& first = Results<Result>::at(result, 0);
    if (!torch::autograd::compute_requires_grad(input) || !torch::autograd::isDifferentiableType(first.scalar_type()))
      return result;
    auto node = make_node<Backward<Spec>>();
    node->set_next_edges(torch::autograd::collect_next_edges(input));
    node->dims = reduced_dims(input, std::get<kDim>(args));
    node->keepdim = std::get<kDim + 1>(args);
    node->scalar = scalar_of(args);
    node->sizes = input.sizes().vec();
    node->dtype = input.scalar_type();
    for (size_t i = 0; i < Results<Result>::kCount; ++i)
      torch::autograd::set_history(Results<Result>::at(result, i), node);
    // The result is saved after set_history, as an output: the node holds no
    // strong reference to itself through it.
    if constexpr (Spec::kBackwardSavesTensors) {
      node->input = SavedVariable(input, /*is_output=*/false);
      node->result = SavedVariable(first, /*is_output=*/true);
    }
    node_created(node);
    return result;
  }

  static Result kernel(Args... args) {
    // torch's forward AD has one level of tangents.
    constexpr uint64_t kLevel = 0;
    const auto tuple = std::forward_as_tuple(args...);
    const at::Tensor& self = std::get<0>(tuple);
    const at::Tensor tangent = self._fw_grad(kLevel);
    if (!tangent.defined()) return primal_result(self, tuple);
    // The primal keeps the input's backward graph, so both modes work at once.
    const at::Tensor primal = self._fw_primal(kLevel);
    Result result = primal_result(primal, tuple);
    const at::Tensor& first = Results<Result>::at(result, 0);
    // An integer or bool result (any, all, an integer dtype=) has no tangent.
    if (!torch::autograd::isDifferentiableType(first.scalar_type())) return result;
    const Tangent t{primal, first, reduced_dims(primal, std::get<kDim>(tuple)), std::get<kDim + 1>(tuple),
                    scalar_of(tuple)};
    const auto same_op = [&](const at::Tensor& x) { return call_with_input<Spec>(x, tuple, Rest{}); };
    Result tangents = Spec::tangent(t, tangent, same_op);
    for (size_t i = 0; i < Results<Result>::kCount; ++i)
      Results<Result>::at(result, i)._set_fw_grad(Results<Result>::at(tangents, i), kLevel, /*is_inplace_op=*/false);
    return result;
  }
};

}  // namespace

TORCH_LIBRARY_IMPL(torch_reduce, Autograd, m) {
#define TORCH_REDUCE_AUTOGRAD(name, Spec, families) m.impl(#name, &Autograd<Spec>::kernel);
  TORCH_REDUCE_FOR_EACH_OP(TORCH_REDUCE_AUTOGRAD)
#undef TORCH_REDUCE_AUTOGRAD
}

}  // namespace torch_reduce
