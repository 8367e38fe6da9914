#pragma once
// Numbers as the app writes them: times with three significant digits, percentages, sizes in
// binary units, bandwidths, and the bandwidth rows of a copy or collective.

#include <QString>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "app/analysis/analysis.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::ui {

// Time in the unit that keeps three significant digits: "41.2 ms", "812 µs", "3.10 s".
QString formatTime(trace::TimeNs ns);
QString formatPct(const std::optional<double>& pct, int decimals = 2);
// Bytes in binary units, three significant digits: "512 B", "3.00 KiB", "27.0 MiB"; "–" when
// unknown (negative).
QString formatBytes(std::int64_t bytes);
QString formatBandwidth(const std::optional<double>& gbps);
// A bandwidth cell of a table: the figure, marked "*" when it is over whole kernels (waits
// included: analysis::BandwidthBasis); the table's note says what "*" means.
QString formatBandwidth(const std::optional<double>& gbps, analysis::BandwidthBasis basis);
// What a bandwidth is over, for a tooltip: analysis::bandwidthBasisText in a sentence.
QString bandwidthBasisTip(analysis::BandwidthBasis basis);
// " · busbw over a process group of 4 ranks" (analysis::busbwRanksNote), "" over the world's.
QString busbwRanksTip(std::int32_t bw_ranks, std::int32_t world_size);
// The bandwidth rows of an event moving `bytes`, as (label, value): "bandwidth" over the
// duration for a copy; for a collective of `kind`, "algbw" and "busbw" (analysis::
// collectiveBandwidth, as the Buckets and collectives tables give them) over `transfer_ns` when
// the kernel was matched on every rank (its part after the last rank's arrival), else over
// `dur`, and a row "bandwidth over" that says which. busbw is over `ranks` (analysis::
// collectiveRanks), with a row "busbw ranks" when those are not the world's.
std::vector<std::pair<QString, QString>> bandwidthRows(std::int64_t bytes, trace::TimeNs dur,
                                                       bool collective,
                                                       analysis::CollectiveKind kind,
                                                       std::int32_t ranks, std::int32_t world_size,
                                                       std::optional<trace::TimeNs> transfer_ns);

}  // namespace ddpscope::ui
