#pragma once
// What the JSON trace reader tolerated in a file: events skipped or fields ignored, counted with
// the first one described, so that a million of them make one warning each. One value holds all
// of them, so that a parse of several pieces and threads can take a piece's back and merge the
// threads' in document order. Part of the reader; not an interface of the library.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trace_error.h"

namespace ddpscope::trace::reader {

// Events of one kind of problem: how many, and the first one (its index in traceEvents, its byte
// offset, what was wrong with it).
struct Tally {
  std::size_t count = 0;
  std::size_t first_index = 0;
  std::uint64_t first_offset = kNoOffset;
  std::string first_detail;

  // Adds the counts of a later part of the document whose event indices start at index_base.
  void merge(const Tally& later, std::size_t index_base);
};

struct ImportTallies {
  std::size_t skipped_other_phase = 0;  // counters, async and other unsupported phases
  Tally bad_duration;                   // skipped: negative or impossible "dur"
  Tally bad_ids;                        // skipped: a pid or tid that is not an integer
  Tally bad_args;                       // ignored: args out of range (step, bucket, size)
  Tally args_not_object;                // ignored: an "args" that is not an object
  Tally repeated_keys;                  // the last value used

  // Adds the tallies of a later part of the document (events from index_base on).
  void merge(const ImportTallies& later, std::size_t index_base);
  // Appends one warning per kind of problem seen, in a fixed order.
  void report(std::vector<std::string>& warnings) const;
};

}  // namespace ddpscope::trace::reader
