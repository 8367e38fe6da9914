#include "import_tallies.h"

namespace ddpscope::trace::reader {

namespace {

void warnAbout(std::vector<std::string>& warnings, const Tally& t, const std::string& what) {
  if (t.count == 0) return;
  std::string w = std::to_string(t.count) + " " + what + "; the first is traceEvents[" +
                  std::to_string(t.first_index) + "]";
  if (t.first_offset != kNoOffset) w += " (byte " + std::to_string(t.first_offset) + ")";
  warnings.push_back(w + ": " + t.first_detail);
}

}  // namespace

void Tally::merge(const Tally& later, std::size_t index_base) {
  if (later.count == 0) return;
  if (count == 0) {
    first_index = later.first_index + index_base;
    first_offset = later.first_offset;
    first_detail = later.first_detail;
  }
  count += later.count;
}

void ImportTallies::merge(const ImportTallies& later, std::size_t index_base) {
  skipped_other_phase += later.skipped_other_phase;
  bad_duration.merge(later.bad_duration, index_base);
  bad_ids.merge(later.bad_ids, index_base);
  bad_args.merge(later.bad_args, index_base);
  args_not_object.merge(later.args_not_object, index_base);
  repeated_keys.merge(later.repeated_keys, index_base);
}

void ImportTallies::report(std::vector<std::string>& warnings) const {
  if (skipped_other_phase > 0) {
    warnings.push_back(std::to_string(skipped_other_phase) +
                       " events of unsupported phases (counters, async, ...) were skipped");
  }
  warnAbout(warnings, bad_duration, "events with a negative or impossible duration were skipped");
  warnAbout(warnings, bad_ids, "events with a pid or tid that is not an integer were skipped");
  warnAbout(warnings, bad_args,
            "events have args out of range (step, bucket, message size), ignored");
  warnAbout(warnings, args_not_object, "events have an \"args\" that is not an object, ignored");
  warnAbout(warnings, repeated_keys, "events repeat a key (the last value was used)");
}

}  // namespace ddpscope::trace::reader
