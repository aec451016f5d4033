// column_short_kernel: columns of one chunk (at most 64 rows), or the first
// level of longer ones, a thread per chunk of a column vector (see
// column_fold.cuh for the order it computes).
#pragma once

#include "column_fold.cuh"
#include "output.cuh"

namespace torch_reduce {
namespace cuda {

// Chunk classes: a chunk's rows rounded up to a power of two, from 2 to 64
// (kChunkRows), each with a kernel of its own. Longer ones hold kRowsPerSlot
// rows a slot; shorter ones (one row a slot) read only their first kChunkRows
// slots, so that an empty slot costs neither a load nor its registers (see
// reduce_short_chunk).
constexpr int chunk_rows_per_slot(int chunk_rows) { return chunk_rows > kSlots ? chunk_rows / kSlots : 1; }
constexpr int chunk_slots_read(int chunk_rows) { return chunk_rows < kSlots ? chunk_rows : kSlots; }

// The slot of leaf q in combine_slots' left-to-right order: q's 3-bit reverse.
__host__ __device__ constexpr int leaf_slot(int q) { return ((q & 1) << 2) | (q & 2) | (q >> 2); }

// One column chunk of at most kChunkRows rows, eight rows a step:
// step t folds the kSlots / kRowsPerSlot slots s = leaf_slot(q) for
// q in [t * that, (t + 1) * that) -- the leaves of one subtree of
// combine_slots' tree, which q-order (0, 4, 2, 6, 1, 5, 3, 7) walks left to
// right -- and merges the subtree with the ones before it like a binary
// counter. Every load of a step is a row of the chunk (slots hold about the
// same number of rows), so that a thread keeps eight rows in flight whatever
// the chunk's length. The step loop stays rolled, but for items of one column
// in chunks of up to four steps (32 rows), whose steps are all loaded first
// (kAhead): a thread then holds few bytes a row, and a step's loads waiting
// on the fold before them kept too few in flight. The result is stored here.
// Chunks of fewer than 8 rows read only their class's slots: the slots
// past them hold no row, and their combines with the identity are left out,
// which changes no bits (x combined with the identity is x: a sum's values
// come from adding to +0, so none is -0; the max and min of a value and
// -inf or +inf is that value). Loads of those slots re-reading row 0 cost
// the bfloat16 kernel both L1 traffic and registers
// (benchmarks/probes/short_columns.cu measures the difference).
// A row is kSpread items of kItems columns, kWarpSize items apart (see
// short_spread): out + e * kWarpSize * kItems gets item e's. kEvictFirst:
// the loads ask the L2 to evict their lines first (see load_input). The
// chunk's row 0 is row `first_row` of the reduction (HasPositions).
template <int kChunkRows, int kItems, int kSpread, bool kEvictFirst, typename in_t, typename acc_t, typename out_t,
          typename Op>
__device__ __forceinline__ void reduce_short_chunk(const in_t* base, int64_t stride, int64_t first_row, int rows,
                                                   out_t* out, const Op& op) {
  constexpr int kRowsPerSlot = chunk_rows_per_slot(kChunkRows);
  constexpr int kSlotsRead = chunk_slots_read(kChunkRows);
  // Whether slot s is one the class reads (known at compile time, once unrolled).
  auto reads_slot = [](int s) { return kSlotsRead == kSlots || s < kSlotsRead; };
  constexpr int kSlotsPerStep = kSlots / kRowsPerSlot;
  constexpr int kHeights = kRowsPerSlot == 8 ? 3 : kRowsPerSlot == 4 ? 2 : kRowsPerSlot == 2 ? 1 : 0;
  constexpr int kColumns = kSpread * kItems;
  constexpr int kSpreadStride = kWarpSize * kItems;
  acc_t pending[kHeights > 0 ? kHeights : 1][kColumns];
  constexpr int kAhead = kColumns == 1 && kRowsPerSlot <= kAheadRowsPerSlot ? kRowsPerSlot : 1;
  int counts[kAhead][kSlotsPerStep];
  Vector<in_t, kItems> loads[kAhead][kSlots][kSpread];
  auto load_step = [&](int t, int (&count)[kSlotsPerStep], Vector<in_t, kItems> (&loaded)[kSlots][kSpread]) {
#pragma unroll
    for (int j = 0; j < kSlotsPerStep; ++j) {
      const int q = t * kSlotsPerStep + j;
      const int s = leaf_slot(q);
      count[j] = slot_rows(rows, s);
      if (!reads_slot(s)) continue;
      // Rows past the slot read row 0 again (a slot of the class may have
      // none): loads stay unpredicated (see load_rows).
#pragma unroll
      for (int k = 0; k < kRowsPerSlot; ++k) {
        const in_t* row = base + (k < count[j] ? s + k * kSlots : 0) * stride;
#pragma unroll
        for (int e = 0; e < kSpread; ++e)
          loaded[j * kRowsPerSlot + k][e] =
              load_input<kEvictFirst, in_t, kItems>(row + e * kSpreadStride);
      }
    }
  };
#pragma unroll kAhead
  for (int t = 0; t < kRowsPerSlot; ++t) {
    if (t % kAhead == 0) {
#pragma unroll
      for (int u = 0; u < kAhead; ++u) load_step(t + u, counts[u], loads[u]);
    }
    const int (&count)[kSlotsPerStep] = counts[t % kAhead];
    const Vector<in_t, kItems> (&loaded)[kSlots][kSpread] = loads[t % kAhead];
    // A full chunk folds without selects, so that ptxas does not sink loads
    // into the fold (and wait for each there): see fold_rows.
    acc_t subtree[kColumns];
    auto fold = [&](auto full) {
#pragma unroll
      for (int c = 0; c < kColumns; ++c) {
        acc_t leaf[kSlotsPerStep];
        bool read[kSlotsPerStep];
#pragma unroll
        for (int j = 0; j < kSlotsPerStep; ++j) {
          read[j] = reads_slot(leaf_slot(t * kSlotsPerStep + j));
          leaf[j] = op.identity();
          if (!read[j]) continue;
#pragma unroll
          for (int k = 0; k < kRowsPerSlot; ++k) {
            const acc_t folded =
                fold_element(op, leaf[j], vector_element<acc_t>(loaded[j * kRowsPerSlot + k][c / kItems], c % kItems),
                             first_row + leaf_slot(t * kSlotsPerStep + j) + k * kSlots);
            leaf[j] = decltype(full)::value || k < count[j] ? folded : leaf[j];
          }
        }
#pragma unroll
        for (int width = kSlotsPerStep / 2; width >= 1; width /= 2) {
#pragma unroll
          for (int j = 0; j < width; ++j) {
            // A read slot's right sibling may be unread, never its left.
            leaf[j] = read[2 * j + 1] ? op.combine(leaf[2 * j], leaf[2 * j + 1]) : leaf[2 * j];
            read[j] = read[2 * j];
          }
        }
        subtree[c] = leaf[0];
      }
    };
    if (rows == kChunkRows) {
      fold(std::true_type{});
    } else {
      fold(std::false_type{});
    }
    // Merge with the left siblings that step t completes (its trailing ones).
    bool carry = true;
#pragma unroll
    for (int h = 0; h < kHeights; ++h) {
      if (carry && ((t >> h) & 1)) {
#pragma unroll
        for (int c = 0; c < kColumns; ++c) subtree[c] = op.combine(pending[h][c], subtree[c]);
      } else if (carry) {
#pragma unroll
        for (int c = 0; c < kColumns; ++c) pending[h][c] = subtree[c];
        carry = false;
      }
    }
    if (carry) {
#pragma unroll
      for (int e = 0; e < kSpread; ++e) {
        Vector<out_t, kItems> result;
#pragma unroll
        for (int i = 0; i < kItems; ++i) result.value[i] = static_cast<out_t>(op.project(subtree[e * kItems + i]));
        store_vector(out + e * kSpreadStride, result);
      }
    }
  }
}

// One column chunk of one narrow item a thread (the NarrowByRows kernels),
// in memory order: step t reads rows 8t .. 8t + 7, a row of each slot, and
// folds each into its slot's accumulators (by fold_element, as
// reduce_short_chunk's leaves fold them; rows past the chunk fold nothing);
// combine_slots folds the slots at the end -- the same fold64 order. A
// narrow item's rows are short, so that a row's sectors hold its neighbours'
// too: read a step apart (reduce_short_chunk's steps are slots, rows eight
// apart), they must stay in the L1 meanwhile, and with the Narrow kernels'
// occupancy they did not. Eight slots of at most two columns' accumulators
// fit the registers that the pending subtrees would.
template <int kRowsPerSlot, int kItems, typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void reduce_narrow_chunk(const in_t* base, int64_t stride, int64_t first_row, int rows,
                                                    out_t* out, const Op& op) {
  acc_t slot[kSlots][kItems];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
#pragma unroll
    for (int i = 0; i < kItems; ++i) slot[s][i] = op.identity();
  }
#pragma unroll 1
  for (int t = 0; t < kRowsPerSlot && t * kSlots < rows; ++t) {
    Vector<in_t, kItems> loaded[kSlots];
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int row = t * kSlots + s;
      loaded[s] = load_vector<in_t, kItems>(base + (row < rows ? row : 0) * stride);
      keep_loaded(loaded[s]);
    }
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const bool valid = t * kSlots + s < rows;
#pragma unroll
      for (int i = 0; i < kItems; ++i)
        if (valid)
          slot[s][i] = fold_element(op, slot[s][i], vector_element<acc_t>(loaded[s], i), first_row + t * kSlots + s);
    }
  }
  Vector<out_t, kItems> result;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    acc_t p[kSlots];
#pragma unroll
    for (int s = 0; s < kSlots; ++s) p[s] = slot[s][i];
    result.value[i] = static_cast<out_t>(op.project(combine_slots(p, op)));
  }
  store_vector(out, result);
}

// Chunks of several steps, not inlined: ptxas then issues each step's eight
// loads before its folds, where inlined into the loop below it interleaves
// them for 64 rows (sm_90 SASS), and only one step's loads and the pending
// subtrees take registers. The result is not handed back, which would take
// it through local memory, and the ops object comes by value: by reference,
// mean's factor went through an 8-byte stack frame. One step (up to 8 rows)
// is inlined: called, the 8-bit types' amax and amin spilled.
template <int kChunkRows, int kItems, int kSpread, bool kEvictFirst, typename in_t, typename acc_t, typename out_t,
          typename Op>
__device__ __noinline__ void reduce_short_chunk_call(const in_t* base, int64_t stride, int64_t first_row, int rows,
                                                     out_t* out, Op op) {
  reduce_short_chunk<kChunkRows, kItems, kSpread, kEvictFirst, in_t, acc_t>(base, stride, first_row, rows, out, op);
}

// One chunk's fold, stored to `out`: in memory order for the NarrowByRows
// kernels (kMemoryOrder), else inlined for one step (see above).
template <int kChunkRows, int kItems, int kSpread, bool kEvictFirst, bool kMemoryOrder, typename in_t,
          typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void short_chunk(const in_t* base, int64_t stride, int64_t first_row, int rows, out_t* out,
                                            const Op& op) {
  if constexpr (kMemoryOrder) {
    static_assert(kSpread == 1 && !kEvictFirst, "one narrow item a thread, read by plain loads");
    reduce_narrow_chunk<chunk_rows_per_slot(kChunkRows), kItems, in_t, acc_t>(base, stride, first_row, rows, out, op);
  } else if constexpr (kChunkRows <= kSlots) {
    reduce_short_chunk<kChunkRows, kItems, kSpread, kEvictFirst, in_t, acc_t>(base, stride, first_row, rows, out, op);
  } else {
    reduce_short_chunk_call<kChunkRows, kItems, kSpread, kEvictFirst, in_t, acc_t>(base, stride, first_row, rows, out,
                                                                                   op);
  }
}

// The threads (units) of a (batch, chunk), and the first item of unit u:
// one item a unit (kSpread 1), or kSpread, kWarpSize apart, so that a
// warp's loads still read adjacent items -- a warp's units then cover
// kWarpSize * kSpread items, and there must be that many
// (short_columns_spread sees to it). The last warp's items end at the last
// item, reading again some that the warp before read: it computes them in
// the same order, and stores the same bits.
__host__ __device__ __forceinline__ int64_t units_per_batch(int64_t items, int spread) {
  return spread == 1 ? items : (items + kWarpSize * spread - 1) / (kWarpSize * spread) * kWarpSize;
}

template <int kSpread>
__device__ __forceinline__ int64_t unit_first_item(int64_t u, int64_t items) {
  if constexpr (kSpread == 1) return u;
  const int64_t warp_first = u / kWarpSize * (kWarpSize * kSpread);
  const int64_t last_warp_first = items - kWarpSize * kSpread;
  return (warp_first < last_warp_first ? warp_first : last_warp_first) + u % kWarpSize;
}

// Columns of one chunk (at most 64 rows), one level: a thread per (batch,
// unit), units fastest so that a warp reads adjacent columns; it writes the
// output. Longer columns (full chunks, eight rows a slot): a thread per
// (batch, chunk, unit), units fastest, then chunks, and the chunk values go
// to the partials for the next pass -- a warp's loads are then rows of 32
// adjacent items, where column_tile_kernel's lanes read 64 bytes of eight
// rows each. (One chunk keeps a loop of its own, with no chunk index to
// divide out.) kEvictFirst: either reads evict-first (evict_first_input).
// kIndexed: one chunk a column, in items of one column, written to the view
// `out_index` (output.cuh) of args.out; gathered columns (a `column_index`
// of one or more dims) start at args.data + strided_offset(b * args.columns
// + c, column_index), dense ones where the layout says.
template <int kChunkRows, int kItems, int kSpread, bool kEvictFirst, bool kIndexed, bool kMemoryOrder,
          typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void short_columns(const ColumnArgs<in_t, acc_t, out_t>& args, const Op& op,
                                              const StridedIndex& out_index, const StridedIndex& column_index) {
  const Output<out_t> out{args.out, out_index};
  const int64_t step = static_cast<int64_t>(gridDim.x) * kColumnThreads;
  const int64_t first = blockIdx.x * static_cast<int64_t>(kColumnThreads) + threadIdx.x;
  const int64_t units = units_per_batch(args.items, kSpread);
  if (args.reduce <= kFoldLength) {
    const int64_t work = args.batch * units;
    const int rows = static_cast<int>(args.reduce);
    for (int64_t w = first; w < work; w += step) {
      const int64_t item = unit_first_item<kSpread>(w % units, args.items);
      const int64_t b = w / units;
      const int64_t column = b * args.columns + item * kItems;
      const in_t* base = kIndexed && column_index.dims != 0
                             ? args.data + strided_offset(static_cast<uint32_t>(column), column_index)
                             : args.data + b * args.batch_stride + item * kItems;
      // The whole column is one chunk: its first row is the reduction's row 0.
      short_chunk<kChunkRows, kItems, kSpread, kEvictFirst, kMemoryOrder, in_t, acc_t>(
          base, args.reduce_stride, 0, rows, out.template at<kIndexed>(column), op);
    }
  } else if constexpr (kChunkRows == kFoldLength && !kIndexed) {
    const int64_t chunks = (args.reduce + kFoldLength - 1) / kFoldLength;
    const int64_t chunk_units = chunks * units;
    const int64_t work = args.batch * chunk_units;
    const int64_t outputs = args.batch * args.columns;
    for (int64_t w = first; w < work; w += step) {
      const int64_t item = unit_first_item<kSpread>(w % units, args.items);
      const int64_t chunk = (w / units) % chunks;
      const int64_t b = w / chunk_units;
      const int64_t first_row = chunk * kFoldLength;
      const int rows = static_cast<int>(args.reduce - first_row < kFoldLength ? args.reduce - first_row : kFoldLength);
      short_chunk<kChunkRows, kItems, kSpread, kEvictFirst, kMemoryOrder, in_t, acc_t>(
          args.data + b * args.batch_stride + first_row * args.reduce_stride + item * kItems, args.reduce_stride,
          first_row, rows, args.partials + chunk * outputs + b * args.columns + item * kItems, Unprojected<Op>{op});
    }
  }
}

// The class of a chunk of `rows` rows (longer columns: of their full
// chunks): its length rounded up to a power of two, from 2 to 64.
inline int short_chunk_rows(int64_t rows) {
  int chunk_rows = 2;
  while (chunk_rows < kFoldLength && chunk_rows < rows) chunk_rows *= 2;
  return chunk_rows;
}

// The items a column_short_kernel reads, and in which order. Narrow items
// (short_spread > 1) take kernels of their own, which read nothing else:
// in the kernels of every width, their loads raised the wide items' register
// counts (ptxas sm_90), and so did a pass of one narrow item a thread, which
// then ran fewer blocks an SM than in a kernel of its own.
//   Wide: the other items, and all indexed ones (one column each).
//   Narrow: one narrow item a thread, in slot order (reduce_short_chunk).
//   NarrowByRows: one narrow item a thread, in memory order
//     (reduce_narrow_chunk); where, narrow_chunk_by_rows says.
//   Spread: as many narrow items a thread as short_spread says (which the
//     launch computes alike), in slot order.
enum class ShortItems { Wide, Narrow, NarrowByRows, Spread };

// A kernel for each chunk class, so that each gets the registers it needs
// rather than those of the longest chunks' pending subtrees, and for each
// ShortItems.
template <int kChunkRows, bool kEvictFirst, bool kIndexed, ShortItems kItemsRead, typename in_t,
          typename acc_t, typename out_t, typename Op>
__global__ void __launch_bounds__(kColumnThreads)
    column_short_kernel(ColumnArgs<in_t, acc_t, out_t> args, Op op, StridedIndex out_index,
                        StridedIndex column_index) {
  static_assert(!kIndexed || kItemsRead == ShortItems::Wide, "indexed columns are read an item at a time");
  start_pass();
  with_width<kIndexed ? 1 : column_width<in_t, acc_t>()>(args.width, [&](auto width) {
    constexpr int kItems = decltype(width)::value;
    constexpr bool kNarrow = short_spread<in_t, acc_t>(kItems) > 1;
    constexpr int kItemsAThread = kItemsRead == ShortItems::Spread ? short_spread<in_t, acc_t>(kItems) : 1;
    if constexpr (kIndexed || kNarrow == (kItemsRead != ShortItems::Wide))
      short_columns<kChunkRows, kItems, kItemsAThread, kEvictFirst, kIndexed,
                    kItemsRead == ShortItems::NarrowByRows>(args, op, out_index, column_index);
  });
}

}  // namespace cuda
}  // namespace torch_reduce
