#pragma once
// Numbers as the app writes them: times with three significant digits, percentages, sizes in
// binary units, bandwidths, and the bandwidth rows of a copy or collective.

#include <QString>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "tracer/format/trace_model.h"

namespace ddpscope::ui {

// Time in the unit that keeps three significant digits: "41.2 ms", "812 µs", "3.10 s".
QString formatTime(trace::TimeNs ns);
QString formatPct(const std::optional<double>& pct, int decimals = 2);
// Bytes in binary units, three significant digits: "512 B", "3.00 KiB", "27.0 MiB"; "–" when
// unknown (negative).
QString formatBytes(std::int64_t bytes);
QString formatBandwidth(const std::optional<double>& gbps);
// The bandwidth rows of an event moving `bytes` in `dur`, as (label, value): "bandwidth" for a
// copy; for a collective "algbw" (bytes / time) and, for an allreduce across 2 or more ranks,
// "busbw" (algbw · 2(p−1)/p, NCCL's bus bandwidth, as the Buckets table gives it).
std::vector<std::pair<QString, QString>> bandwidthRows(std::int64_t bytes, trace::TimeNs dur,
                                                       bool collective, std::string_view name,
                                                       std::int32_t world_size);

}  // namespace ddpscope::ui
