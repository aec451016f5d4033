// The schedule both layouts share: a unit's blocks combined pairwise in a
// tree fixed by their number (PairwiseCombiner), and the split of units, or
// of subtrees of that tree, among threads (reduce_blocks). Apart because it
// alone decides the parallel split, and that the split changes no result.
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "common.h"

namespace torch_reduce {
namespace cpu {

// Combines the results of blocks 0, 1, 2, ... pairwise as they arrive, in
// O(log blocks) space: a binary counter merges each complete pair of equal
// subtrees, and finish() merges what is left, last first. The tree depends
// only on the number of blocks (blocks [0, n) split after the largest power
// of two below n), and any aligned run of 2^k blocks is one of its subtrees,
// which is what lets threads fold such spans on their own.
template <typename acc_t, typename Op>
class PairwiseCombiner {
 public:
  PairwiseCombiner(int64_t width, int64_t max_blocks, const Op& op)
      : width_(width),
        op_(op),
        slots_(std::make_unique<acc_t[]>(width * (ceil_log2(max_blocks) + 1))) {}

  // Where the next block's `width` results are to be written.
  acc_t* next() { return slots_.get() + depth_ * width_; }

  // Takes the results written to next().
  void push() {
    ++depth_;
    for (int64_t n = ++count_; n % 2 == 0; n /= 2) merge_top();
  }

  // The combined results of the blocks pushed so far (at least one); then
  // starts over.
  const acc_t* finish() {
    while (depth_ > 1) merge_top();
    depth_ = count_ = 0;
    return slots_.get();
  }

 private:
  void merge_top() {
    acc_t* below = slots_.get() + (depth_ - 2) * width_;
    const acc_t* top = below + width_;
    for (int64_t c = 0; c < width_; ++c) below[c] = op_.combine(below[c], top[c]);
    --depth_;
  }

  int64_t width_;
  const Op& op_;
  std::unique_ptr<acc_t[]> slots_;
  int64_t depth_ = 0;
  int64_t count_ = 0;
};

// The schedule shared by both layouts: `units` independent groups of `width`
// outputs, each made of `blocks` blocks of about `block_work` elements.
// leaf(unit, block, count, acc) writes the `width` results of each of blocks
// block, ..., block + count - 1, one after the other (count is at most
// `leaf_blocks`: a leaf that gains from folding blocks side by side asks for
// more than one); store(unit, acc) writes a unit's outputs from its combined
// results.
template <typename acc_t, typename Op, typename Leaf, typename Store>
void reduce_blocks(int64_t units, int64_t blocks, int64_t width,
                   int64_t block_work, int64_t leaf_blocks, const Op& op,
                   const Leaf& leaf, const Store& store) {
  // Blocks [first, last) of unit u, pushed in order; several at a time go
  // through `group`, single ones straight into the combiner.
  auto push_blocks = [&](PairwiseCombiner<acc_t, Op>& combiner, acc_t* group, int64_t u,
                         int64_t first, int64_t last) {
    for (int64_t b = first; b < last;) {
      const int64_t count = std::min(leaf_blocks, last - b);
      if (count == 1) {
        leaf(u, b, 1, combiner.next());
        combiner.push();
      } else {
        leaf(u, b, count, group);
        for (int64_t k = 0; k < count; ++k) {
          std::copy_n(group + k * width, width, combiner.next());
          combiner.push();
        }
      }
      b += count;
    }
  };
  // Enough tasks to balance the threads: whole units when there are many,
  // otherwise spans of a power-of-two number of blocks (subtrees of the
  // unit's tree, so the split does not change the results). Each thread
  // takes a contiguous range of tasks, of at least GRAIN_SIZE elements: the
  // grain bounds the threads, not the spans, which stay fine enough to split
  // the blocks evenly. With spans of at least GRAIN_SIZE elements, two
  // threads split the six blocks of a float64 sum of 84132 elements four and
  // two.
  const int64_t tasks_per_unit = ceil_div(4 * at::get_num_threads(), units);
  const int64_t grain_blocks = ceil_div(at::internal::GRAIN_SIZE, block_work);
  int64_t span = blocks;
  if (tasks_per_unit > 1) span = bit_floor(ceil_div(blocks, tasks_per_unit));
  const int64_t spans = ceil_div(blocks, span);
  if (spans == 1) {
    const int64_t grain = std::max<int64_t>(1, grain_blocks / blocks);
    at::parallel_for(0, units, grain, [&](int64_t begin, int64_t end) {
      PairwiseCombiner<acc_t, Op> combiner(width, blocks, op);
      auto group = std::make_unique<acc_t[]>(leaf_blocks * width);
      for (int64_t u = begin; u < end; ++u) {
        if (blocks == 1) {  // short columns: the combiner's bookkeeping would cost more
          acc_t* acc = combiner.next();
          leaf(u, 0, 1, acc);
          store(u, acc);
          continue;
        }
        push_blocks(combiner, group.get(), u, 0, blocks);
        store(u, combiner.finish());
      }
    });
    return;
  }
  auto span_results = std::make_unique<acc_t[]>(units * spans * width);
  at::parallel_for(0, units * spans, ceil_div(grain_blocks, span), [&](int64_t begin, int64_t end) {
    PairwiseCombiner<acc_t, Op> combiner(width, span, op);
    auto group = std::make_unique<acc_t[]>(leaf_blocks * width);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t u = task / spans, first = task % spans * span;
      push_blocks(combiner, group.get(), u, first, std::min(blocks, first + span));
      std::copy_n(combiner.finish(), width, span_results.get() + task * width);
    }
  });
  PairwiseCombiner<acc_t, Op> combiner(width, spans, op);
  for (int64_t u = 0; u < units; ++u) {
    for (int64_t k = 0; k < spans; ++k) {
      std::copy_n(span_results.get() + (u * spans + k) * width, width, combiner.next());
      combiner.push();
    }
    store(u, combiner.finish());
  }
}

}  // namespace cpu
}  // namespace torch_reduce
