// Launch geometry of column passes (launch_columns.cuh): which column
// kernel reads a pass, its grid, and how column_tile_kernel reads few
// columns. All of them compute the same order (column_fold.cuh), so these
// choices may depend on any size. What each tuned constant trades, and the
// evidence for its value: docs/TUNING.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "column_block_kernel.cuh"
#include "column_flat_kernel.cuh"
#include "column_short_kernel.cuh"
#include "column_tile_kernel.cuh"
#include "device_info.cuh"
#include "launch_config.cuh"
#include "launch_policy.cuh"

namespace torch_reduce {
namespace cuda {

// column_block_kernel's blocks and column_tile_kernel's teams fold whole
// tiles of 64 chunks (two levels in one pass); there must be tiles enough to
// give each SM one.
// (LaunchPolicy: tile_blocks_per_sm.)

inline bool tiles_fill_device(int64_t tile_columns, int64_t chunks) {
  return tile_columns * ceil_div(chunks, kFoldLength) >= launch_policy().tile_blocks_per_sm * sm_count();
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

// One chunk (at most 64 rows): column_short_kernel, whose threads read all
// the rows of their columns, eight a step, in rows / 8 dependent steps with
// no barrier -- where there are threads enough to stream
// (short_column_min_threads) or steps few enough (short_column_max_steps; up to
// 32 rows in items of one column: short_columns_read_ahead) for a warp's
// worth of items. Otherwise column_block_kernel (its eight warps are the
// slots: one round, then a barrier) where there is a warp's worth of items,
// else column_tile_kernel's teams (tiny outputs, such as the last passes of
// a few long columns).
// Longer columns: column_block_kernel needs a warp's worth of items, enough
// bytes to stream (block_column_min_bytes) and tiles enough to fill the
// device; the rest go to column_tile_kernel or column_chunk_kernel (slots as
// lanes: eight times the threads for the same bytes), which beat the block
// kernel's single chunks where its tiles are too few.
// (LaunchPolicy: block_column_min_bytes, short_column_min_threads, short_column_max_steps.)

// Long columns of rows of 256 bytes or more, in inputs larger than the L2,
// whose tiles do not fill the device for the block kernel: column_short_kernel
// reads the first level (a thread a chunk of a column vector, a warp's load
// 32 adjacent vectors of a row, every thread resident at once) and later
// passes fold the chunk values, which stay in the L2 (evict_first_input).
// That beats the teams' two levels by more than the extra level costs;
// inputs that fit in the L2 lost, and so did rows of 128 bytes, where a
// warp's load spans four chunks.
// (LaunchPolicy: short_chunks_min_row_bytes.)

// column_tile_kernel's warps read a chunk row kMaxRowLanes items at a time,
// so items narrower than 8 bytes (one or two half-precision columns, one
// float32: an odd column count or a misaligned view) take each 32-byte
// sector in several pieces. column_block_kernel's warps read 32 adjacent
// items of a row, so it takes such passes of one tile where the tiles fill
// the device (narrow_items_kernel). The first pass of longer columns goes to
// column_short_kernel's first level, a thread a chunk, where there are
// items x chunks enough to stream (narrow_items_min_threads): a thread keeps
// one step of eight rows in flight, so few threads wait on the L2 step after
// step. Other such passes stay with the tile kernel: the block kernel lost
// on longer columns, and the short kernel on tiles too few for the device.

// Passes of narrow items with fewer items x chunks than this (threads at one
// item a thread; a quarter of the H100's resident threads) are too small to
// stream: they wait on latency, where more threads, not more bytes a thread,
// help.
// (LaunchPolicy: narrow_items_min_threads.)

// Which kernel reads a pass that column_kernel gives the tile kernel, given
// its items as loaded (`items` of `item_bytes` each).
inline ColumnKernel narrow_items_kernel(int64_t reduce, int64_t batch, int64_t items, int64_t item_bytes,
                                        bool later_pass) {
  const int64_t chunks = ceil_div(reduce, kFoldLength);
  if (item_bytes >= kNarrowItemBytes || items < kWarpSize || chunks == 1) return ColumnKernel::Tile;
  if (chunks <= kFoldLength)
    return tiles_fill_device(batch * ceil_div(items, kWarpSize), chunks) ? ColumnKernel::Block : ColumnKernel::Tile;
  const bool streams = batch * items * chunks >= launch_policy().narrow_items_min_threads;
  return !later_pass && streams ? ColumnKernel::Short : ColumnKernel::Tile;
}

// Chunks of narrow items read one a thread (column_short_kernel's Narrow
// kernels) go in memory order (NarrowByRows: a step reads eight consecutive
// rows) for chunks of eight rows a slot (more than 32 rows), and of four a
// slot in rows shorter than a 128-byte line; else in slot order (a step
// reads a slot's rows, eight apart). Rows that share lines are read together
// in memory order; read steps apart, the L1 lost them. Memory order lost for
// fewer, longer rows, for a reason not found.
constexpr int64_t kLineBytes = 128;

inline bool narrow_chunk_by_rows(int rows_per_slot, int64_t row_pitch_bytes) {
  return rows_per_slot == kSlots || (rows_per_slot == kSlots / 2 && row_pitch_bytes < kLineBytes);
}

// Where column_short_kernel may read the first level (see short_chunks_min_row_bytes).
inline bool short_chunks_fit(int64_t chunks, int64_t bytes, int64_t row_bytes) {
  return chunks > kFoldLength && row_bytes >= launch_policy().short_chunks_min_row_bytes && bytes > l2_bytes();
}

// Where column_short_kernel could read the first level (short_chunks_fit),
// column_block_kernel keeps it only if its items (as loaded) are not narrow
// -- its warps would read 2 or 4 bytes a lane, where the short kernel reads
// several such items a thread -- and its tiles (`units`: batch x item blocks
// x tiles) fill their waves (tiles_fill_waves): the block kernel folds a
// tile a block, so a poorly filled last wave idles most of the device for a
// tile's time.
inline bool block_tiles_keep_first_level(int64_t units, int64_t resident, int64_t item_bytes) {
  return item_bytes >= kNarrowItemBytes && tiles_fill_waves(units, resident);
}

// One chunk of up to four steps (32 rows) read in items of one column (an
// odd column count or a misaligned view; column_kernel counts the widest
// items): column_short_kernel's threads then load all their rows before they
// fold them (kAheadRowsPerSlot), and beat column_block_kernel, whose blocks
// fold 32 such items a row: a thread of one column holds few bytes a row, so
// its registers hold every row of the chunk in flight at once.
inline bool short_columns_read_ahead(int64_t reduce, int width) {
  return width == 1 && reduce <= kAheadRowsPerSlot * kSlots;
}

// items: of the widest width a row allows (column_width); width: the items'
// width that the data allow (column_item_width).
inline ColumnKernel column_kernel(int64_t reduce, int64_t batch, int64_t items, int width, int64_t bytes,
                                  int64_t row_bytes) {
  const LaunchPolicy& policy = launch_policy();
  if (reduce <= kFoldLength) {
    const bool wide = items >= kWarpSize;
    if (reduce <= kSlots || batch * items >= policy.short_column_min_threads ||
        (wide && (reduce <= policy.short_column_max_steps * kSlots || short_columns_read_ahead(reduce, width))))
      return ColumnKernel::Short;
    return wide ? ColumnKernel::Block : ColumnKernel::Tile;
  }
  const int64_t chunks = ceil_div(reduce, kFoldLength);
  if (items >= kWarpSize && bytes >= policy.block_column_min_bytes &&
      tiles_fill_device(batch * ceil_div(items, kWarpSize), chunks))
    return ColumnKernel::Block;
  // A pass of one tile stays with the teams: two levels in one pass.
  if (short_chunks_fit(chunks, bytes, row_bytes)) return ColumnKernel::Short;
  return ColumnKernel::Tile;
}

// column_short_kernel's items a thread: a thread of one narrow item keeps
// 2 or 4 bytes a row in flight, too few to stream, so passes large enough
// (narrow_items_min_threads) read `most` (short_spread), kWarpSize items
// apart, where a row has items enough for a warp of such threads. Smaller
// passes keep one item a thread: there more threads hide latency better than
// more bytes a thread, and reading several lost.
inline int short_columns_spread(int64_t threads, int64_t items, int most) {
  const bool streams = threads >= launch_policy().narrow_items_min_threads;
  return streams && items >= static_cast<int64_t>(kWarpSize) * most ? most : 1;
}

// The grid of a column pass. The kernels loop over their blocks' work, so
// the grid may be smaller than the work: sm_count() * max_blocks_per_sm
// blocks, or for column_short_kernel's passes of one chunk of 8 rows or
// more, one block per 256 work items, as torch.sum launches them (the loop
// was slightly slower there). Threads of fewer rows keep the loop: blocks of
// so few loads a thread cost more than they save; chunks of up to 4 rows
// take one wave (short_rows_grid).
constexpr int64_t kMaxGridBlocks = std::numeric_limits<int32_t>::max();

inline bool short_block_per_work(int64_t reduce) { return reduce >= kSlots && reduce <= kFoldLength; }

inline int64_t column_pass_grid(ColumnKernel kernel, int64_t reduce, int64_t blocks) {
  const bool block_per_work = kernel == ColumnKernel::Short && short_block_per_work(reduce);
  const int64_t most =
      block_per_work ? kMaxGridBlocks : static_cast<int64_t>(sm_count()) * launch_policy().max_blocks_per_sm;
  return std::max<int64_t>(1, std::min(blocks, most));
}

// column_short_kernel's passes of chunk classes of 2 and 4 rows, whose
// threads each read a few rows of one item and exit: one wave of resident
// blocks (`resident` an SM) that loop over the items, rather than blocks
// that start and retire so often that their turnover holds back a pass
// whose input is mostly in the L2 (benchmarks/probes/short_columns.cu
// measures it). DRAM-bound passes are level either way. Chunks of 5 to 7
// rows (the class of 8) keep the grid above: one wave lost there.
inline unsigned int short_rows_grid(unsigned int grid, int resident) {
  return static_cast<unsigned int>(std::min<int64_t>(grid, static_cast<int64_t>(sm_count()) * resident));
}

// A pass of a block per unit (column_pass_grid) whose blocks do not fill
// their waves of `resident` blocks an SM (tiles_fill_waves) has a last wave
// that runs nearly alone, as its blocks start and end together. It takes
// instead a looping grid of k blocks an SM, 2 <= k < resident, that spreads
// the units most evenly (the larger k of a tie): one block an SM would leave
// an SM a single block's loads in flight. Passes that fill their waves keep
// a block a unit, where a looping grid lost.
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

// A team of column_tile_kernel reads its tile's chunks one after another, its
// 64 x row_lanes lanes eight rows each in flight. With fewer lanes than this
// in all, column_chunk_kernel's single chunks (eight times the lanes) are
// faster, even counting the pass they add; with more, teams are as fast and
// fold two levels a pass. A pass of one tile (at most 64 chunks) is the last
// with teams, where single chunks would leave another pass.
// (LaunchPolicy: tile_min_lanes.)

// column_chunk_kernel counts its units (lane groups' chunks) in 32 bits;
// inputs of more units (some 2^36 elements) go to the teams.
constexpr int64_t kChunkKernelMaxUnits = std::numeric_limits<int32_t>::max();

inline bool tile_teams_stream(int64_t item_groups, int row_lanes, int64_t chunks) {
  if (chunks <= kFoldLength || item_groups * chunks > kChunkKernelMaxUnits) return true;
  const int64_t lanes = item_groups * ceil_div(chunks, kFoldLength) * kSlots * kSlots * row_lanes;
  return tiles_fill_device(item_groups, chunks) && lanes >= launch_policy().tile_min_lanes;
}

// How column_tile_kernel.cuh reads a pass of few columns: teams (two levels,
// eight lane groups a tile), or where they would have too few lanes, a block
// a tile (column_wide_kernel, two levels) if the tiles fill the device, else
// single chunks (column_chunk_kernel, one level, as many lanes as chunks).
// The wide blocks save single chunks a pass, and read a last pass of 30
// chunks a column in one round where a team takes four.
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
// teams would read in more than four rounds (later_pass_team_chunks) and wide
// blocks could not speed up (lane groups of four items), goes to single
// chunks and one more pass: a team's rounds follow one another, single
// chunks read the tile in one. Most first passes of one tile keep their
// teams, but for those of at most few_team_blocks team blocks, which leave
// the device mostly idle. Wide blocks of one-item lane groups lost to single
// chunks in both kinds of pass.
// (LaunchPolicy: later_pass_team_chunks, few_team_blocks.)

// Columns of one chunk (64 rows or fewer) go to single chunks, which write
// the output: a team would leave seven of its eight lane groups idle.
//
// Teams whose blocks do not fill their waves (tiles_fill_waves: a second wave
// of a few blocks, each streaming a tile, takes as long as the first) go to
// single chunks, spread evenly, where their units fit.
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
    const LaunchPolicy& policy = launch_policy();
    if (one_tile && chunks > policy.later_pass_team_chunks && (later_pass || team_blocks <= policy.few_team_blocks))
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
// The flat pass folds one level, where wide blocks and teams fold two, and
// its blocks wait for their slowest unit each step: it is taken for inputs
// of flat_columns_min_bytes or more with columns longer than a chunk and rows
// of more than one item; the item kernels were faster for the rest.
// (LaunchPolicy: flat_columns_min_bytes.)

inline int64_t flat_first_column(uintptr_t address, int64_t element_bytes, int64_t item_width, int64_t batch,
                                 int64_t reduce, int64_t columns, int64_t batch_stride, int64_t reduce_stride) {
  const int64_t width = std::max<int64_t>(kVectorBytes / element_bytes, 1);
  const int64_t first = static_cast<int64_t>(address % kVectorBytes) / element_bytes;
  const bool narrow = item_width * element_bytes < kNarrowItemBytes && columns > item_width;
  const bool large = reduce > kFoldLength &&
                     batch * reduce * reduce_stride * element_bytes >= launch_policy().flat_columns_min_bytes;
  const bool dense = reduce_stride - columns >= first && reduce_stride - columns < width;
  const bool runs = (kSlots * reduce_stride) % width == 0 && kSlots * reduce_stride / width <= kColumnThreads;
  const bool batches = batch == 1 || (batch_stride % width == 0 && batch_stride >= reduce * reduce_stride);
  return narrow && large && dense && runs && batches ? first : -1;
}

}  // namespace cuda
}  // namespace torch_reduce
