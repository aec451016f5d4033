// Launch geometry: host-side heuristics, apart from the kernels. Everything a
// dim reduction's order depends on is a function of the reduced length alone
// (batch invariance); only full reductions may size the launch to the device.
#pragma once

#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "column_block_kernel.cuh"
#include "column_flat_kernel.cuh"
#include "column_short_kernel.cuh"
#include "column_tile_kernel.cuh"
#include "device_info.cuh"
#include "packed_row_reduce.cuh"
#include "row_reduce.cuh"
#include "split_row_reduce.cuh"
#include "staged_rows_kernel.cuh"

namespace torch_reduce {
namespace cuda {

// Rows of at least this many bytes go to split_row_reduce_kernel (a block or
// more each); shorter rows to row_reduce_kernel (a warp or less each). On the
// H100, rows of 16 and 32 KiB read faster a block each (results/dims_h100.json
// against the same file at 2c3ca17, which split rows from 64 KiB: 4096 x 4096
// float32 24.3 -> 23.3 us, 16384 x 16384 bfloat16 186.0 -> 174 us); rows of
// 4 and 8 KiB slower (a sweep, not committed: 65536 x 1024 float32 88 -> 109
// us, 4096 x 4096 bfloat16 7.3 -> 10.4 us).
constexpr int64_t kSplitRowBytes = 16 * 1024;
// In a dim reduction, one block of a split row reads this many tiles. Fewer
// were no faster, or slower (H200 A/B of one build, a dev hook, not
// committed, sum over the last dim, us, 8 -> 4 / 2 / 1 tiles a block): bfloat16
// 3 x 5000000 6.29 -> 6.33 / 6.67 / 7.62, 8 x 16777216 62.9 -> 62.9 / 67.5 /
// 73.9; float32 32 x 1048576 32.8 -> 33.3 / 33.8 / 36.2. So more blocks, more
// loads in flight, do not close bfloat16 3 x 5000000's gap to a plain read
// (4.91 us).
constexpr int64_t kTilesPerSplit = 8;
// Grid-stride kernels: blocks per SM beyond which a bigger grid buys nothing.
constexpr int64_t kMaxBlocksPerSm = 32;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }


// A kernel as a type, so that a launcher generic over it can ask
// resident_blocks of it.
template <auto kernel>
struct Kernel : std::integral_constant<decltype(kernel), kernel> {};

// Resident blocks per SM of `kernel`, asked once per kernel. The kernel is
// a template argument, not the type of one: the instantiations of a kernel
// template that differ in a flag share a signature, and a count cached by
// signature went to whichever of them asked first.
template <auto kernel>
int resident_blocks(int threads) {
  static const int blocks = [&] {
    int n = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0));
    return std::max(n, 1);
  }();
  return blocks;
}

inline int64_t split_row_tiles(int64_t row_length, int element_bytes) {
  const int64_t vectors = row_length * element_bytes / kVectorBytes;
  return std::max<int64_t>(1, ceil_div(vectors, kSplitTileVectors));
}

// Up to this many tiles, one block reading them in turn beats splitting: the
// combine step costs more (about three L2 round trips) than a second tile.
constexpr int64_t kSingleBlockTiles = 2;

// A full reduction fills the device once: at most one wave of resident blocks.
inline int64_t full_reduction_splits(int64_t n, int element_bytes, int resident_per_sm) {
  const int64_t tiles = split_row_tiles(n, element_bytes);
  if (tiles <= kSingleBlockTiles) return 1;
  return std::min<int64_t>(tiles, static_cast<int64_t>(sm_count()) * resident_per_sm);
}

// A long row of a dim reduction: a fixed amount of work per block.
inline int64_t dim_reduction_splits(int64_t row_length, int element_bytes) {
  return ceil_div(split_row_tiles(row_length, element_bytes), kTilesPerSplit);
}

// Lanes per row: the fewest (a power of two) that leave each lane at most
// kRowSlots items, up to a warp. More lanes, fewer items each, lost though
// benchmarks/probes/short_rows.cu ranked two items a lane first (H200 A/B of
// one build, a dev hook, not committed, sum over the last dim, us, four ->
// two items a lane, one row a lane a pass: bfloat16 262144 x 128 19.1 ->
// 22.6, 1048576 x 32 17.4 -> 20.6, float32 262144 x 128 33.0 -> 34.7; read
// several rows a lane, 21.3, 20.8 and 37.5; one item a lane, 30.8, 28.7 and
// 54.3).
inline int row_group_size(int64_t items) {
  int group = 1;
  while (group < kWarpSize && group * static_cast<int64_t>(kRowSlots) < items) group *= 2;
  return group;
}

// Rows a lane reads per pass: 1 for rows too long for the several-rows
// kernel; for shorter ones, as many as its loads hold, unless that leaves fewer lanes than a block per SM, in which
// case fewer (down to one), for more lanes. A row's order does not depend on
// how many rows its lane reads, so this may depend on the batch. In the H100
// sweep at b738faf (results/sweep_h100.json), a bfloat16 sum of 1376 rows of
// 13, read 4 to a lane (two blocks), took 4.5 us, torch 2.1.
inline int short_rows_per_pass(int64_t rows, int group, int items_per_lane) {
  const int64_t most = row_reduce_rows_per_pass(items_per_lane);
  const int64_t lanes_wanted = static_cast<int64_t>(sm_count()) * kRowThreads;
  return static_cast<int>(std::clamp<int64_t>(rows * group / lanes_wanted, 1, most));
}

// column_block_kernel's blocks and column_tile_kernel's teams fold whole
// tiles of 64 chunks (two levels in one pass); there must be tiles enough to
// give each SM one.
constexpr int64_t kTileBlocksPerSm = 1;

inline bool tiles_fill_device(int64_t tile_columns, int64_t chunks) {
  return tile_columns * ceil_div(chunks, kFoldLength) >= kTileBlocksPerSm * sm_count();
}

// Blocks that each read whole tiles (`units` of them, `resident` at a time
// on the device) run in waves, each as long as a tile: they fill their waves
// where they fit in one or fill two thirds or more of their waves' blocks.
// Below that, the last wave leaves most of the device idle for a tile's time.
inline bool tiles_fill_waves(int64_t units, int64_t resident) {
  const int64_t waves = ceil_div(units, resident);
  return waves == 1 || 3 * units >= 2 * waves * resident;
}

// Column reductions (column_fold.cuh): which kernel reads a pass best.
// All three compute the same order, so the choice may depend on any size.
enum class ColumnKernel { Short, Block, Tile };

// One chunk (at most 64 rows): column_short_kernel, whose threads have all
// the rows of their columns to themselves and read them eight at a time, in
// rows / 8 dependent steps -- when there are threads enough to stream, or
// steps few enough (up to 16 rows; up to 32 in items of one column, loaded
// ahead: short_columns_read_ahead) for a warp's worth of items. Otherwise
// column_block_kernel reads the chunk in one round (its eight warps are the
// slots) if there is a warp's worth of items, and column_tile_kernel's teams
// if not (tiny outputs, such as the last passes of a few long columns: 30 x
// 4 float32, the last pass of 7840000 x 4 at 43f9e04, took 3.1 us in the
// short kernel of that time, eight steps: results/column_passes_h100_43f9e04.txt).
// On the H200 (sweeps of one kernel against the other, not committed,
// float32 / bfloat16 us): 12 x 65536 short 2.34 / 2.66, block 4.57 / 3.12;
// 16 x 1024 short 2.09 / 1.99, block 2.37 / 2.59; 24 x 2048 short 2.93 /
// 3.68, block 2.41 / 2.64; 20 x 300000 bfloat16 (37500 threads) short 5.45,
// block 11.3; 64 x 262144 bfloat16 (32768 threads) short 6.94, block 11.2;
// 33 x 100000 short 4.91 / 5.94, block 6.73 / 5.16 -- hence 16K threads, a
// judgement between 12500 and 25000; 64 x 16384 short 4.96 / 6.19, block
// 2.89 / 2.87.
// Longer columns: column_block_kernel needs a warp's worth of items, enough
// bytes to stream and tiles enough to fill the device; the rest go to
// column_tile_kernel or column_chunk_kernel (slots as lanes), which have
// eight times more threads for the same bytes. The block kernel's single
// chunks, where its tiles were too few, lost to them on the H100
// (results/dims_h100.json against the same file at 2c3ca17: 4096 x 4096
// float32 30.7 -> 27.3 us, bfloat16 16.7 -> 10.3 us) but for a few float32
// inputs of many chunks (65536 x 1024 98.2 -> 103 us). Tried again at 56ceb63
// (H100 A/B, not committed), single chunks for those passes lost as much:
// 4096 x 4096 float32 26.3 -> 28.4 us, bfloat16 9.2 -> 14.7 us, bfloat16
// 65536 x 1024 54 -> 56 us; only float32 65536 x 1024 gained (100 -> 97 us).
constexpr int64_t kBlockColumnMinBytes = 16 << 20;
constexpr int64_t kShortColumnMinThreads = 16 * 1024;
constexpr int64_t kShortColumnMaxSteps = 2;  // rows per slot: short for any warp's worth of items

// Long columns of rows of 256 bytes or more, in inputs larger than the L2,
// whose tiles do not fill the device for the block kernel:
// column_short_kernel reads the first level (one chunk of a column vector a
// thread, a warp's load 32 adjacent vectors of a row, every thread of the
// pass resident at once), and later passes fold the chunk values. Its pass is faster than the teams' two levels, by more than the
// extra level costs (H100 A/B of builds with and without, not committed,
// sum over dim 0, float32 us, with the later-pass rule of tile_mode: 262144
// x 128 55.1 -> 51.8, 500000 x 64 52.8 -> 49.9, 131072 x 256 54.1 -> 52.2,
// 8192 x 4096 52.1 -> 50.1, 65536 x 1024 99.8 -> 97.0; bfloat16 65536 x
// 1024 unchanged at 53.5). The input is read evict-first where its
// partials fit in half of the L2 (evict_first_input), which keeps them
// there for the next pass (H100 A/B, not committed, sum over dim 0, us:
// float32 65536 x 1024 96.9 -> 92.7, 262144 x 128 51.4 -> 50.0, bfloat16
// 65536 x 1024 53.4 -> 49.6). With evict-first, inputs of 64 MiB gained too
// (H100 A/B of the 100 MiB bound this took before against the L2, not
// committed, bfloat16 us: 131072 x 256 30.9 -> 29.8, 8192 x 4096 28.3 ->
// 27.7, 262144 x 128 29.9 -> 29.8), where without it they had lost (8192 x
// 4096 28.1 -> 28.7, 262144 x 128 30.1 -> 31.3). Inputs that fit in the L2
// lost (bfloat16 16384 x 1024 10.3 -> 10.8; float32 200000 x 64 23.3 ->
// 23.6), and rows of 128 bytes lost (float32 1048576 x 32 51.2 -> 51.6 and
// 51.9 in two runs): a warp's load then spans four chunks.
constexpr int64_t kShortChunksMinRowBytes = 256;

// An input larger than the L2, which a kernel reads once, is read
// evict-first (load_vector_evict_first) where what the kernel writes fits in half of
// the L2: the L2 then evicts the input's clean lines rather than the
// output's (or the next pass's partials'), which the next kernel reads.
// H100 A/B (not committed, one build, the policy forced either way; sum,
// us, normal -> evict-first): over dim 0, float32 3 x 5000000 28.2 -> 26.0,
// 32 x 1048576 48.4 -> 45.5, 65536 x 1024 97.6 -> 93.2 (the first level of
// column_short_kernel), bfloat16 16 x 4194304 49.8 -> 45.4; over the last
// dim, float32 1048576 x 32 51.1 -> 47.3, 262144 x 128 47.0 -> 44.7,
// bfloat16 7840000 x 4 27.5 -> 23.5 (packed_row_reduce_kernel). Where the
// output does not fit, evict-first lost: float32 8 x 16777216 over dim 0
// (64 MiB written) 201.2 -> 209.6, bfloat16 (32 MiB) 101.2 -> 105.1.
inline bool evict_first_input(int64_t read_bytes, int64_t written_bytes) {
  return read_bytes > l2_bytes() && 2 * written_bytes <= l2_bytes();
}

// column_tile_kernel's warps read a chunk row kMaxRowLanes items at a time:
// items narrower than 8 bytes (one or two half-precision columns, one
// float32, where an odd column count or a misaligned view allows no wider
// load) take each 32-byte sector in several pieces. column_block_kernel's
// warps read 32 adjacent items of a row at once. Where its tiles fill the
// device and a column group is one tile (at most 64 chunks), it reads such a
// pass faster (H100 sweep, results/sweep_h100.json at 93e0607 against a run
// of the same cases without this rule, not committed, us: float16 amax over
// (0, 1) of (4, 118, 7711) 14.8 -> 6.7, torch 6.1; bfloat16 sum over (1, 2)
// of a sliced (443, 699, 69) 80.8 -> 58.1, torch 45.7). A first version (a
// sweep, not committed) that also took longer columns (bfloat16 amax of
// 852600 rows of 49: 87 -> 104) and sent passes whose tiles do not fill the
// device to column_short_kernel lost (float16 amin over dim 0 of (398, 1151)
// 4.1 -> 5.7, bfloat16 amin over (0, 1) of (2070, 2, 469) 6.9 -> 10.2).
// The first pass of longer columns of such items (more than one tile), with
// a warp's worth of them, goes to column_short_kernel's first level, whose
// warps read 32 adjacent items of a row too, a thread a chunk -- where it
// has items and chunks enough to stream (kNarrowItemsMinThreads): a thread
// keeps one step of eight rows in flight, so a pass of few threads waits on
// the L2 step after step (the (2070, 2, 469) pass above, 30485 threads,
// lost). The float16 mean over (0, 1) of (2893, 7, 449) has 142333, the
// bfloat16 amax of 852600 rows of 49 652778. H100, the sweep at 5edf619
// against the same cases in results/sweep_h100.json, us: 22.5 -> 15.7
// (torch 13.9) and 84.5 -> 73.3 (57.0), both latency-bound at one 2-byte
// item a thread (16 bytes in flight a step); reading four a thread
// (short_columns_spread) took the first to 10.9 (13.5). The second, dense,
// now takes the flat pass (flat_first_column).

// Passes of narrow items with fewer items x chunks than this (threads at one
// item a thread; a quarter of the H100's resident threads) are too small to
// stream: they wait on latency, where more threads, not more bytes a thread,
// help.
constexpr int64_t kNarrowItemsMinThreads = 64 * 1024;

// Which kernel reads a pass that column_kernel gives the tile kernel, given
// its items as loaded (`items` of `item_bytes` each).
inline ColumnKernel narrow_items_kernel(int64_t reduce, int64_t batch, int64_t items, int64_t item_bytes,
                                        bool later_pass) {
  const int64_t chunks = ceil_div(reduce, kFoldLength);
  if (item_bytes >= kNarrowItemBytes || items < kWarpSize || chunks == 1) return ColumnKernel::Tile;
  if (chunks <= kFoldLength)
    return tiles_fill_device(batch * ceil_div(items, kWarpSize), chunks) ? ColumnKernel::Block : ColumnKernel::Tile;
  const bool streams = batch * items * chunks >= kNarrowItemsMinThreads;
  return !later_pass && streams ? ColumnKernel::Short : ColumnKernel::Tile;
}

// Chunks of narrow items read one a thread (column_short_kernel's Narrow
// kernels): in memory order (NarrowByRows: a step reads eight consecutive
// rows) for chunks of more than 32 rows (eight a slot, as all first levels
// of longer columns), and of 17 to 32 rows (four a slot) shorter than a
// 128-byte line; in slot order (a step reads a slot's rows, eight apart)
// otherwise. Rows that share lines are read together in memory order; in
// slot order they are read steps apart, and over eight steps the L1 lost
// them. H100 A/B (not committed, sum over dim 1 of (n, rows, columns) of
// about 96 MiB, us, slot order / memory order, torch in brackets): float16
// 24 rows of 17 columns 58.5 / 45.1 (50.1), of 130 columns 41.6 / 60.8
// (43.7); 48 rows of 33 columns 58.4 / 45.4 (45.4); float32 12 rows of 7
// columns 40.9 / 47.3 (44.2), 48 rows 84.1 / 41.8 (42.8), 64 rows of 33
// columns 51.2 / 40.3 (41.4). Why memory order loses for fewer rows of
// longer rows was not found.
constexpr int64_t kLineBytes = 128;

inline bool narrow_chunk_by_rows(int rows_per_slot, int64_t row_pitch_bytes) {
  return rows_per_slot == kSlots || (rows_per_slot == kSlots / 2 && row_pitch_bytes < kLineBytes);
}

// Where column_short_kernel may read the first level (see kShortChunksMinRowBytes).
inline bool short_chunks_fit(int64_t chunks, int64_t bytes, int64_t row_bytes) {
  return chunks > kFoldLength && row_bytes >= kShortChunksMinRowBytes && bytes > l2_bytes();
}

// column_block_kernel folds a whole tile a block, so its blocks run in
// waves of the device's resident blocks, each as long as a tile. Where
// column_short_kernel could read the first level instead (short_chunks_fit),
// the block kernel keeps the pass only if its items (as loaded) are not
// narrow -- its warps would read 2 or 4 bytes a lane, where the short kernel
// reads several such items a thread -- and its tiles (`units`: batch x item
// blocks x tiles) fit in one wave or fill two thirds or more of their waves'
// blocks: below that, the last wave leaves most of the device idle for a
// tile's time. H100 A/B, one build, the choice forced either way by a dev
// hook (not committed), sum over dim 0 unless said, us, block / short
// (torch), the fill of the waves in brackets: int32 amin over (0, 1, 2) of
// (5, 4, 755, 4238) [51%] 106.6 / 99.5 (97.0); float32 16384 x 9000 [54%]
// 234.7 / 209.7 (209.8), 16384 x 10000 [60%] 241.8 / 232.5 (231.4), 65536 x
// 2600 [64%] 246.4 / 240.3 (248.0), 16384 x 11000 [65%] 255.5 / 255.4 (257.1);
// bfloat16 16384 x 18000 [54%] 267.9 / 214.7 (210.1), 16384 x 20000 [60%]
// 269.7 / 240.7 (252.4); narrow items: bfloat16 30000 x 4238 [68%] 143.3 /
// 100.6 (108.2), amax 141.7 / 101.2 (132.4). Kept by the block kernel:
// float32 16384 x 12000 [71%] 263.5 / 270.9, 65536 x 3000 [73%] 268.8 /
// 276.2, 65536 x 7000 [83%, four waves] 624.9 / 659.3, 16384 x 16000 [95%]
// 347.8 / 374.1; bfloat16 16384 x 28000 [83%] 316.4 / 337.9, amax 30000 x
// 8000 [one wave] 162.0 / 169.9; of those, only bfloat16 16384 x 24000 [71%]
// would have gained, 292.4 / 286.5 (275.8).
inline bool block_tiles_keep_first_level(int64_t units, int64_t resident, int64_t item_bytes) {
  return item_bytes >= kNarrowItemBytes && tiles_fill_waves(units, resident);
}

// One chunk of up to four steps (32 rows) read in items of one column (an
// odd column count or a misaligned view; column_kernel counts the widest
// items): column_short_kernel's threads then load all their rows before they
// fold them (kAheadRowsPerSlot), and beat column_block_kernel, whose blocks
// fold 32 such items a row. H100 A/B of one build (the rule behind a dev
// hook, not committed), us, block -> short (torch), sums over dim 1:
// float32 (13, 29, 885) 3.87 -> 2.42 (3.18), (64, 17, 885) 11.86 -> 2.85
// (3.02), (200, 30, 301) 13.39 -> 3.25 (3.70); bfloat16 (3, 20, 7711) 6.04
// -> 2.39 (2.94), (100, 24, 1001) 21.39 -> 3.83 (3.55; several items a
// thread there, short_columns_spread, not loaded ahead); amax alike, 38 of
// 38 cases faster or tied (2.34 -> 2.27 the least). In the sweep only its
// float32 amax over dim 1 of (13, 29, 59, 15) took it, 3.96 -> 2.47 (3.45).
inline bool short_columns_read_ahead(int64_t reduce, int width) {
  return width == 1 && reduce <= kAheadRowsPerSlot * kSlots;
}

// items: of the widest width a row allows (column_width); width: the items'
// width that the data allow (column_item_width).
inline ColumnKernel column_kernel(int64_t reduce, int64_t batch, int64_t items, int width, int64_t bytes,
                                  int64_t row_bytes) {
  if (reduce <= kFoldLength) {
    const bool wide = items >= kWarpSize;
    if (reduce <= kSlots || batch * items >= kShortColumnMinThreads ||
        (wide && (reduce <= kShortColumnMaxSteps * kSlots || short_columns_read_ahead(reduce, width))))
      return ColumnKernel::Short;
    return wide ? ColumnKernel::Block : ColumnKernel::Tile;
  }
  const int64_t chunks = ceil_div(reduce, kFoldLength);
  if (items >= kWarpSize && bytes >= kBlockColumnMinBytes && tiles_fill_device(batch * ceil_div(items, kWarpSize), chunks))
    return ColumnKernel::Block;
  // A pass of one tile stays with the teams: two levels in one pass.
  if (short_chunks_fit(chunks, bytes, row_bytes)) return ColumnKernel::Short;
  return ColumnKernel::Tile;
}

// column_short_kernel's items a thread: a thread of one narrow item keeps
// 2 or 4 bytes a row in flight (a pass of 4125 half-precision columns ran at
// 1.3 TB/s), so passes large enough to stream (kNarrowItemsMinThreads) read
// `most` (short_spread), kWarpSize items apart, where a row has items enough
// for a warp of such threads. H100, results/sweep_only_h100.json at 8593429
// against the same cases in results/sweep_h100.json (at 42ea0a5; the first
// level below at 5edf619), us, torch in brackets: float16 amin over dim 1
// of (1917, 12, 33, 125), 4125 columns of 12 rows, 147.1 -> 78.5 (120.5);
// bfloat16 amin over dim 1 of (31, 4, 5, 8723) 11.4 -> 6.4 (12.7); float16
// mean over (0, 1) of (2893, 7, 449), its first level, 15.7 -> 10.9 (13.5).
// Smaller passes (1219 to 19129 threads) lost 0.1-0.4 us in a build that
// read several a thread at any size (not committed: bfloat16 amax over dim 0
// of (4, 94, 407) 1.78 -> 2.17), hence the bound.
inline int short_columns_spread(int64_t threads, int64_t items, int most) {
  const bool streams = threads >= kNarrowItemsMinThreads;
  return streams && items >= static_cast<int64_t>(kWarpSize) * most ? most : 1;
}

// The grid of a column pass. The kernels loop over their blocks' work, so
// the grid may be smaller than the work: sm_count() * kMaxBlocksPerSm
// blocks, or for column_short_kernel's passes of one chunk of 8 rows or
// more, one block per 256 work items, as torch.sum launches them (H100 A/B,
// not committed, sum over dim 0, us: float32 8 x 16777216 201.4 -> 200.0,
// where torch.sum took 200.1; bfloat16 101.4 -> 100.9; float32 32 x 1048576
// 46.2 either way). Threads of fewer rows keep the loop: blocks of so few
// loads a thread cost more than they saved (float32 3 x 5000000 25.6 ->
// 26.4); chunks of up to 4 rows, one wave (short_rows_grid).
constexpr int64_t kMaxGridBlocks = std::numeric_limits<int32_t>::max();

inline bool short_block_per_work(int64_t reduce) { return reduce >= kSlots && reduce <= kFoldLength; }

inline int64_t column_pass_grid(ColumnKernel kernel, int64_t reduce, int64_t blocks) {
  const bool block_per_work = kernel == ColumnKernel::Short && short_block_per_work(reduce);
  const int64_t most = block_per_work ? kMaxGridBlocks : static_cast<int64_t>(sm_count()) * kMaxBlocksPerSm;
  return std::max<int64_t>(1, std::min(blocks, most));
}

// column_short_kernel's passes of chunk classes of 2 and 4 rows, whose
// threads each read a few rows of one item and exit: one wave of resident
// blocks (`resident` an SM) that loop over the items, rather than blocks
// that start and retire so often that their turnover holds back a pass
// whose input is mostly in the L2 (probe, H200,
// benchmarks/results/short_columns_h200.txt, bfloat16 3 x 5000000, 2442
// blocks or one wave of 1056: 7.93 -> 6.65 us). H200 A/B of one build, the
// grid switched by a dev hook (not committed), sum over dim 0, us, the grid
// above -> one wave: bfloat16 2 x 5000000 4.72 -> 4.53, 3 x 5000000 8.05 ->
// 7.63, 4 x 5000000 11.81 -> 9.99 (amax 11.95 -> 9.39), float16 alike,
// float32 (DRAM-bound either way) 3 x 5000000 20.27 -> 20.59, 4 x 5000000
// 23.00 -> 22.81. Chunks of 5 to 7 rows (the class of 8) keep the grid above:
// one wave lost there (bfloat16 5 x 5000000 16.46 -> 17.16, 6 x 5000000
// 18.85 -> 19.60).
inline unsigned int short_rows_grid(unsigned int grid, int resident) {
  return static_cast<unsigned int>(std::min<int64_t>(grid, static_cast<int64_t>(sm_count()) * resident));
}

// A pass of one block per unit of work (column_pass_grid's one chunk of 8
// rows or more), in a kernel that loops over its units, whose blocks do not
// fill their waves of `resident` blocks an SM (tiles_fill_waves): its blocks
// start and end together, so the last wave runs nearly alone. It takes
// instead a looping grid of k blocks an SM, 2 <= k < resident, that spreads
// the units most evenly (the larger k of a tie). Two an SM is the fewest
// measured; one would leave an SM a single block's loads in flight, as the
// one-wave teams that lost did (column_tile_kernel). H200, sum over dim 0,
// us: the grid forced by a dev hook (not committed), a block a unit -> 2 an
// SM (3 an SM, looping, in brackets): bfloat16 32 x 1048576, 512 blocks of
// 3 resident an SM, 18.75 -> 17.56 (18.70), amax 19.69 -> 17.81 (18.86);
// then this rule (with k from 1) against a block a unit, one build, a dev
// hook (not committed): the same 18.91 -> 17.36, amax 19.59 -> 17.40, while
// 23 other passes of 8 to 64 rows (float32 and bfloat16, 400000 to 1900000
// columns), which it leaves alone, moved by under 1%; bench_dims.py's sum
// and amax, a median of 0.998. Passes that fill their waves keep a block a
// unit: there a looping grid lost (bfloat16 8 x 16777216, 8192 blocks,
// 70.66 -> 71.77 at 2 an SM).
inline int64_t wave_balanced_grid(int64_t blocks, int resident) {
  const int64_t sms = sm_count();
  if (tiles_fill_waves(blocks, sms * resident)) return blocks;
  int64_t best = blocks, best_slots = 0;  // slots: blocks x rounds, of which `blocks` are used
  for (int k = resident - 1; k >= 2; --k) {
    const int64_t grid = sms * k;
    const int64_t slots = grid * ceil_div(blocks, grid);
    if (best_slots == 0 || slots < best_slots) best = grid, best_slots = slots;
  }
  return best;
}

// A team of column_tile_kernel reads its tile's chunks one after another: its
// 64 x row_lanes lanes keep only eight rows each in flight. With fewer lanes
// than this in all, column_chunk_kernel's single chunks (eight times the
// lanes) are faster, even for small inputs whose extra passes are a good
// part of the time (H100, results/dims_h100.json against the same file at
// 43f9e04, which sent inputs up to 12 MiB to the teams: 1000000 x 2 float32
// 9.1 -> 7.7 us, bfloat16 9.7 -> 7.4 us). With many lanes, teams are as
// fast: single chunks for every input over 12 MiB
// (results/dims_h100_chunk_everywhere.json, against dims_h100.json at
// 43f9e04) took float32 7840000 x 4 52.3 -> 53.0 us, 1048576 x 32 55.2 ->
// 55.9 us, 1048576 x 8 11.1 -> 12.8 us, bfloat16 1048576 x 32 30.2 -> 32.5
// us. And a pass of one tile (at most 64 chunks) is the last with teams,
// where single chunks would leave another pass (32768 x 32 float32 6.1 ->
// 5.7 us, 7840000 x 4 52.3 -> 51.5 us).
constexpr int64_t kTileMinLanes = 32 * 1024;

// column_chunk_kernel counts its units (lane groups' chunks) in 32 bits;
// inputs of more units (some 2^36 elements) go to the teams.
constexpr int64_t kChunkKernelMaxUnits = std::numeric_limits<int32_t>::max();

inline bool tile_teams_stream(int64_t item_groups, int row_lanes, int64_t chunks) {
  if (chunks <= kFoldLength || item_groups * chunks > kChunkKernelMaxUnits) return true;
  const int64_t lanes = item_groups * ceil_div(chunks, kFoldLength) * kSlots * kSlots * row_lanes;
  return tiles_fill_device(item_groups, chunks) && lanes >= kTileMinLanes;
}

// How column_tile_kernel.cuh reads a pass of few columns: teams (two levels,
// eight lane groups a tile), or where they would have too few lanes, a block
// a tile (column_wide_kernel, two levels) if the tiles fill the device, else
// single chunks (column_chunk_kernel, one level, as many lanes as chunks).
// The wide blocks save single chunks a pass (H100, results/dims_h100.json
// at 58a33e2 against the same file at 3660dcb: 1000000 x 2 float32 6.06 ->
// 5.43 us, bfloat16 5.84 -> 5.39 us, 1048576 x 8 bfloat16 7.71 -> 7.04 us),
// and read a last pass of 30 chunks a column in one round where a team took
// four (7840000 x 4, results/dims_h100.json against the same file at
// 58a33e2: float32 47.7 -> 46.4 us, bfloat16 28.6 -> 27.7 us).
enum class TileMode { Teams, Wide, Chunks };

// Items of one chunk row that column_tile_kernel's lanes share: a power of
// two, up to kMaxRowLanes (then 8 slots x 4 items fill a warp).
inline int tile_row_lanes(int64_t items) {
  int lanes = 1;
  while (lanes < kMaxRowLanes && lanes < items) lanes *= 2;
  return lanes;
}

// Two levels: teams of eight lane groups of 8 x row_lanes lanes, each team a tile.
inline int tile_teams(int row_lanes) { return kColumnThreads / (kSlots * kSlots * row_lanes); }
// One level (column_chunk_kernel): lane groups of 8 x row_lanes lanes, each a chunk at a time.
inline int tile_lane_groups(int row_lanes) { return kColumnThreads / (kSlots * row_lanes); }

// A later pass (partials, in L2) of one tile with few item groups, which
// teams would read in more than four rounds and wide blocks could not speed
// up (lane groups of four items), goes to single chunks and one more pass
// (H100 A/B, not committed, sum over dim 0, us: the 4096 chunk values of
// float32 262144 x 128 after column_short_kernel 54.0 -> 51.8, bfloat16 200000
// x 64 10.9 -> 9.6). With four rounds or fewer the teams were as fast or
// faster (float32 131072 x 256: 32 chunks, 52.5 -> 52.2; 65536 x 1024: 16
// chunks, 97.0 -> 98.6), and so were most first passes of one tile (float32
// 2048 x 2048 4.6 -> 6.2, 2048 x 512 4.0 -> 4.6, bfloat16 4096 x 4096 8.8 ->
// 10.2; only bfloat16 2048 x 512 gained, 5.2 -> 4.5), which keep their teams
// -- but for first passes of at most kFewTeamBlocks team blocks (those were
// of 128), where the device is mostly idle and each team's rounds follow one
// another: single chunks read them in one round of more blocks (H200 A/B,
// one build, the rule switched by a dev hook, not committed, sweep of seed 0,
// us, teams -> single chunks (torch): case 218, float64 sum over (0, 1) of a
// sliced (28, 94, 5), 42 chunks of 2 item groups, 4.42 -> 2.52 (3.51); case
// 392, float32 sum over (0, 1) of a sliced (26, 152, 2, 7), 4.47 -> 2.58
// (5.30); no other case of the 400 nor of bench_dims.py's sum moved past
// the run-to-run spread, with a bound of 8 blocks or of 32). Wide blocks of
// lane groups of one item each (a block an item, two rounds where lane
// groups of four items take eight) lost to single chunks in both kinds of
// pass, where a warp's load reads 16 bytes of each of 32 rows (H200 A/B of
// one build, a dev hook, not committed, us: sum over dim 0 of float32
// 262144 x 128 36.3 -> 40.7, its pass of 32 wide blocks 6.0 under ncu;
// bfloat16 21.3 -> 25.8, bfloat16 200000 x 64 8.2 -> 10.4; the sweep's
// cases 218 2.68 -> 3.30 and 392 2.42 -> 3.79).
constexpr int64_t kLaterPassTeamChunks = 4 * kSlots;
constexpr int64_t kFewTeamBlocks = 32;

// Columns of one chunk (64 rows or fewer) go to single chunks, which write
// the output: a team would leave seven of its eight lane groups idle (H100
// A/B, not committed, sum, us, teams -> single chunks: float16 (22, 44, 10,
// 5) over dim 2 12.35 -> 1.93, torch 2.52; bfloat16 (1314, 58, 18) over dim
// 1 25.3 -> 2.96; float32 (4096, 40, 6) over dim 1 24.1 -> 2.81; float32
// (100000, 17, 3) 10.3 either way; the same bits).
//
// Teams whose blocks do not fill their waves (tiles_fill_waves: a second wave
// of a few blocks, each streaming a tile, doubled the pass) go to single
// chunks, spread evenly, where their units fit (H100 A/B, one build, teams
// forced by a dev hook, not committed, us, teams -> single chunks (torch):
// float64 sum over dim 0 of 7920 x 539, 270 blocks of two resident an SM,
// 17.5 -> 12.6 (13.0); the sweep's float64 amax over (1, 2) of a transposed
// (539, 264, 30) 18.3 -> 12.8 (13.0)).
// `team_slots`: column_tile_kernel's resident blocks on the device.
inline TileMode tile_mode(int64_t item_groups, int row_lanes, int64_t chunks, bool later_pass, int64_t team_slots) {
  if (chunks == 1) return TileMode::Chunks;
  if (tile_teams_stream(item_groups, row_lanes, chunks)) {
    // One tile per item group, for fewer item groups than SMs (the last pass
    // of a few long columns): where a team of narrow lane groups would read
    // it in several rounds, the wide blocks take one or two.
    const bool one_tile = chunks <= kFoldLength && item_groups < sm_count();
    if (one_tile && chunks > kSlots && row_lanes < kMaxRowLanes) return TileMode::Wide;
    const int64_t team_blocks = ceil_div(item_groups * ceil_div(chunks, kFoldLength), tile_teams(row_lanes));
    if (one_tile && chunks > kLaterPassTeamChunks && (later_pass || team_blocks <= kFewTeamBlocks))
      return TileMode::Chunks;
    if (!tiles_fill_waves(team_blocks, team_slots) && item_groups * chunks <= kChunkKernelMaxUnits)
      return TileMode::Chunks;
    return TileMode::Teams;
  }
  return tiles_fill_device(item_groups, chunks) ? TileMode::Wide : TileMode::Chunks;
}

// The first pass of columns of narrow items (kNarrowItemBytes) reads dense
// rows as one flat run (column_flat_kernel.cuh) where the columns are a
// window of frame rows of reduce_stride elements with less than a vector's
// width of them outside it, the frame (the view's start rounded down to 16
// bytes, and each batch's) aligned, and eight frame rows of at most
// kColumnThreads vectors. A thread then keeps eight 16-byte loads in flight
// where a narrow item's thread kept eight of 2 or 4 bytes. Returns the
// window's first column in the frame, or -1.
//
// The flat pass folds one level, where the wide blocks and teams fold two,
// and its blocks wait for their slowest unit each step: it is taken for
// inputs of kFlatColumnsMinBytes or more whose columns are longer than a
// chunk and whose rows hold more than one item. H100 A/B, one build with the
// flat pass switched off by a dev hook (not committed), sum over dim 0
// unless said, us, flat / item kernels (torch): bfloat16 852600 x 49 39.2 /
// 73.0 (47.9), 2000000 x 33 58.4 / 103.0 (92.9), 4000000 x 3 13.6 / 21.4
// (14.6), a (262144, 127) slice 32.6 / 59.9 (35.2); float32 4000000 x 3 24.3
// / 30.7 (25.2), 2000000 x 5 17.6 / 28.7 (16.7), 70000 x 33 7.0 / 9.0
// (12.2), 250000 x 5 5.8 / 6.6 (8.1); int32 amin 5000000 x 5 41.2 / 65.4
// (44.4). It lost for small inputs (bfloat16 300 x 77 3.5 / 2.4, float32
// 20000 x 9 4.2 / 3.7), for rows of one item (bfloat16 1000000 x 2 6.7 /
// 5.1), for columns of one chunk (float16 mean over dim 1 of a (202758, 22,
// 7) slice 68.1 / 48.0; 67.2 / 48.5 with the one wave of blocks that
// launch_flat_columns now launches), and for items of 8 bytes (float32 540000 x 6 8.5
// / 6.9, bfloat16 7840000 x 4 31.9 / 27.7, float64 1000000 x 7 27.0 / 25.0;
// only float32 10000000 x 10 gained, 141.3 / 163.9).
constexpr int64_t kFlatColumnsMinBytes = 4 << 20;

inline int64_t flat_first_column(uintptr_t address, int64_t element_bytes, int64_t item_width, int64_t batch,
                                 int64_t reduce, int64_t columns, int64_t batch_stride, int64_t reduce_stride) {
  const int64_t width = kVectorBytes / element_bytes;
  const int64_t first = static_cast<int64_t>(address % kVectorBytes) / element_bytes;
  const bool narrow = item_width * element_bytes < kNarrowItemBytes && columns > item_width;
  const bool large = reduce > kFoldLength && batch * reduce * reduce_stride * element_bytes >= kFlatColumnsMinBytes;
  const bool dense = reduce_stride - columns >= first && reduce_stride - columns < width;
  const bool runs = (kSlots * reduce_stride) % width == 0 && kSlots * reduce_stride / width <= kColumnThreads;
  const bool batches = batch == 1 || (batch_stride % width == 0 && batch_stride >= reduce * reduce_stride);
  return narrow && large && dense && runs && batches ? first : -1;
}

// Rows a block of staged_rows_kernel takes: enough for kStagedBlocksPerSm
// blocks an SM, up to as many whole rows as one round trip of its loads
// stages (kStagedElements), at least one. A row's order does not depend on
// its block's rows (staged_rows_kernel.cuh), so this may depend on the batch
// and the device. Small inputs are latency-bound: spread over more SMs, each
// thread stages fewer elements, each found by a chain of dependent integer
// operations. A block's rows fill at most max(kStagedElements, row_length)
// elements of shared memory, 16 KiB at most (kSmallGatherMaxRowBytes).
constexpr int64_t kStagedBlocksPerSm = 4;
inline int staged_rows_per_block(int64_t row_length, int64_t rows) {
  const int64_t most = std::max<int64_t>(1, kStagedElements / row_length);
  return static_cast<int>(std::clamp<int64_t>(ceil_div(rows, sm_count() * kStagedBlocksPerSm), 1, most));
}
static_assert(kSmallGatherMaxRowBytes <= kSplitRowBytes, "staged rows take the order of row_reduce_kernel's rows");

inline int64_t grid_stride_blocks(int64_t work_items, int threads) {
  return std::max<int64_t>(1, std::min(ceil_div(work_items, threads), static_cast<int64_t>(sm_count()) * kMaxBlocksPerSm));
}

}  // namespace cuda
}  // namespace torch_reduce
