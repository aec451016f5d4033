// Rows read through strides (ReduceLayout::Gather): row b starts at
// strided_offset(b, rows), and its elements lie in the reduced runs' order
// from there (RowGather). The kernels read such a row's items -- kWidth
// consecutive elements, as in a contiguous row -- element by element, and
// fold them in the order of a contiguous row of the same length, which is
// the order the copy they replace was folded in.
#pragma once

#include "capabilities.cuh"
#include "primitives.cuh"
#include "strided_index.cuh"

namespace torch_reduce {
namespace cuda {

// Where a gathered row's elements lie: element r of a row is element
// c = r % n0 of the innermost reduced run (`inner`, one dim: n0 elements at a
// stride) of the segment q = r / n0 that the other runs (`outer`) place.
struct RowGather {
  StridedIndex rows;
  StridedIndex inner;
  StridedIndex outer;
};

static_assert(kMaxRuns <= kMaxStridedDims, "a Gather layout's runs fit a StridedIndex");

// The runs [first, last) of `runs` as an index.
inline StridedIndex strided_index(const Runs& runs, int first, int last) {
  StridedIndex index;
  index.dims = last - first;
  for (int d = first; d < last; ++d) {
    set_divisor(index, d - first, static_cast<uint32_t>(runs.sizes[d]));
    index.strides[d - first] = static_cast<uint32_t>(runs.strides[d]);
  }
  return index;
}

inline RowGather row_gather(const ReduceLayout& layout) {
  const Runs& reduce = layout.reduce_runs;
  return {strided_index(layout.batch_runs, 0, layout.batch_runs.count), strided_index(reduce, 0, 1),
          strided_index(reduce, 1, reduce.count)};
}

// A gathered row's element r: its segment and its place in it.
struct GatheredElement {
  uint32_t segment;
  uint32_t column;  // in the innermost run
  uint32_t offset;
};

__device__ __forceinline__ GatheredElement gathered_element(uint32_t r, const RowGather& gather) {
  const uint32_t segment = divide_by_size(r, gather.inner, 0);
  const uint32_t column = r - segment * gather.inner.sizes[0];
  return {segment, column, strided_offset(segment, gather.outer) + column * gather.inner.strides[0]};
}

// Where the elements first .. first + kWidth - 1 of a gathered row lie,
// from the row's start. Only the first element's place takes divisions.
// Where the innermost run holds an item (n0 >= kWidth), the item lies in its
// first element's segment and at most the next one, whose place is found
// only where the item reaches it; each element's place is then a select and
// a multiply-add, apart from the others', so that the loads wait on a few
// integer operations rather than on a chain of kWidth steps (the chain, with
// a segment's place inlined at every step, made the split kernel's bfloat16
// instantiation several times longer, sm_90 SASS). Shorter runs step along
// the innermost run and divide again at each segment they cross, and so do
// items of two elements (float64): there the select and the next segment's
// start cost more than the one step they replace (more instructions, sm_90
// SASS, and slower).
template <int kWidth>
__device__ __forceinline__ void place_item(uint32_t first, const RowGather& gather, uint32_t (&offset)[kWidth]) {
  const uint32_t n0 = gather.inner.sizes[0];
  const uint32_t stride = gather.inner.strides[0];
  GatheredElement at = gathered_element(first, gather);
  if (kWidth > 2 && n0 >= kWidth) {
    // Elements i >= in_first lie in the next segment, which starts where
    // element in_first would lie were `next` the item's start.
    const uint32_t in_first = n0 - at.column;
    uint32_t next = at.offset;
    if (in_first < kWidth) next = strided_offset(at.segment + 1, gather.outer) - in_first * stride;
#pragma unroll
    for (int i = 0; i < kWidth; ++i) offset[i] = (i < in_first ? at.offset : next) + i * stride;
    return;
  }
#pragma unroll
  for (int i = 0; i < kWidth; ++i) {
    offset[i] = at.offset;
    if (i + 1 == kWidth) break;
    at.offset += stride;
    if (++at.column == n0) {
      at.column = 0;
      at.offset = strided_offset(++at.segment, gather.outer);
    }
  }
}

// Elements first .. first + kWidth - 1 of a gathered row that starts at
// `row`, of which those below `length` (at least one) are the row's: an item,
// loaded as load_elements loads one (every load at once, each under its
// predicate) and folded by fold_elements.
template <typename T>
__device__ __forceinline__ Elements<T> load_gathered(const T* row, int64_t first, int64_t length,
                                                     const RowGather& gather) {
  constexpr int kWidth = vector_width<T>();
  Elements<T> e;
  e.count = length - first < kWidth ? static_cast<int>(length - first) : kWidth;
  uint32_t offset[kWidth];
  place_item(static_cast<uint32_t>(first), gather, offset);
#pragma unroll
  for (int i = 0; i < kWidth; ++i) e.value[i] = i < e.count ? row[offset[i]] : T{};
  return e;
}

}  // namespace cuda
}  // namespace torch_reduce
