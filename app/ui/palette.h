#pragma once
// Every colour of the app, by meaning (docs/UI.md "Visual language", Okabe–Ito): the roles of
// activity, the marks drawn over the timeline, text colours, the source badges, and the palettes
// of the light (export) and dark themes. No other file names a colour.

#include <QColor>
#include <QString>
#include <cstdint>
#include <string_view>

class QIcon;

namespace ddpscope::analysis {
enum class CollectiveKind : std::uint8_t;
}

namespace ddpscope::ui {

namespace colours {
// The roles of activity.
inline const QColor kCompute{0x00, 0x72, 0xB2};      // blue
inline const QColor kCommHidden{0x00, 0x9E, 0x73};   // bluish green
inline const QColor kCommExposed{0xD5, 0x5E, 0x00};  // vermillion
inline const QColor kMemory{0x99, 0x99, 0x99};       // grey
inline const QColor kSync{0xF0, 0xE4, 0x42};         // yellow
inline const QColor kStep{0x6B, 0x72, 0x80};         // slate: neutral, not a data colour
// The Steps tab's parts (docs/UI.md "Steps"): exposed communication waiting for a late rank
// (vermillion, darker) beside its transfer (kCommExposed); idle time by what the host did: a
// launch pending (lavender grey), in the data loader (kHostDataLoader), host-bound (pale grey).
inline const QColor kCommWaiting = kCommExposed.darker(150);
inline const QColor kIdlePending{0xB8, 0xB8, 0xD8};
inline const QColor kIdleHostBound{0xE2, 0xE2, 0xE2};
// The selected event, the selected bucket's outlines and flows, the aligned step's line.
inline const QColor kSelection{0x11, 0x11, 0x11};
// Okabe–Ito orange, with dark text: a warning about a run (the INCOMPLETE badge), not a role.
inline const QColor kWarning{0xE6, 0x9F, 0x00};

// The source badges: SIMULATED reddish purple, CUDA blue, PREDICTED dark violet (a what-if
// replay, not a recording), IMPORTED (and MIXED) slate.
inline const QColor kBadgeSimulated{0xCC, 0x79, 0xA7};
inline const QColor kBadgePredicted{0x5E, 0x3C, 0x99};
inline const QColor kBadgeCuda = kCompute;
inline const QColor kBadgeOther = kStep;

// Text.
// Warning text on the window's background (INCOMPLETE, warning counts, GPU idle that matters).
inline const QColor kWarningText = kWarning.darker(140);
// The message of a failed run or sweep: vermillion, as exposed communication.
inline const QColor kErrorText = kCommExposed;
// The overlap figure of the headline: the hidden-communication colour, darker to read as text.
inline const QColor kOverlapText = kCommHidden.darker(130);
// Labels beside values: the headline's names, the details' keys, notes under a table ("gray").
inline const QColor kLabelGrey{0x80, 0x80, 0x80};
// The keys of the timeline's hover tooltip.
inline const QColor kTooltipKey{0x77, 0x77, 0x77};
// Text on a coloured source badge.
inline const QColor kOnBadge{Qt::white};
// Text on a light fill and on a dark one (textOn).
inline const QColor kTextOnLightFill{0x1A, 0x1A, 0x1A};
inline const QColor kTextOnDarkFill{Qt::white};

// Collective kinds (communication kernels in the stream lanes; collectiveKindColour): Paul Tol's
// "muted" scheme, colour-blind safe, none of them a role colour above. The part of a kernel not
// hidden under compute carries a band of kCommExposed along its bottom.
inline const QColor kAllReduce{0x88, 0xCC, 0xEE};      // cyan
inline const QColor kReduceScatter{0xCC, 0x66, 0x77};  // rose
inline const QColor kAllGather{0xDD, 0xCC, 0x77};      // sand
inline const QColor kAllToAll{0x99, 0x99, 0x33};       // olive
inline const QColor kBroadcast{0xAA, 0x44, 0x99};      // purple
inline const QColor kReduce{0x88, 0x22, 0x55};         // wine
inline const QColor kSendRecv{0x33, 0x22, 0x88};       // indigo
inline const QColor kCommUnknown{0xDD, 0xDD, 0xDD};    // pale grey: the name says no collective
// The host lanes (and the GPU annotation lanes): Paul Tol's "light" scheme, colour-blind safe,
// lighter than the GPU lanes' colours so that the host side reads as context.
inline const QColor kHostOp{0x77, 0xAA, 0xDD};  // light blue: CPU ops
// lilac: user annotations (Tol's light yellow sat next to synchronisation's yellow)
inline const QColor kHostAnnotation{0xCC, 0x99, 0xEE};
inline const QColor kHostLaunch{0xEE, 0x88, 0x66};      // orange: CUDA runtime/driver calls
inline const QColor kHostComm{0xFF, 0xAA, 0xBB};        // pink: DDP's reducer, nccl:* ranges
inline const QColor kHostDataLoader{0xBB, 0xCC, 0x33};  // pear: data loading
inline const QColor kGpuAnnotation{0x44, 0xBB, 0x99};   // mint: ranges annotated on a GPU stream
// One collective matched on every rank (the selected kernel's): its outline on each rank.
inline const QColor kMatchedOutline{0x11, 0x11, 0x11};
// Search matches on the timeline: an outline, and the current match's thicker one.
inline const QColor kSearchMatch{0xE6, 0x9F, 0x00};
inline const QColor kSearchCurrent{0x11, 0x11, 0x11};

// Marks over the timeline.
// The selected time range: a dashed outline over a light fill, its label on a white card.
inline const QColor kRangeOutline{0x33, 0x33, 0x33};
inline const QColor kRangeFill{0x56, 0xB4, 0xE9, 40};
inline const QColor kRangeLabelFill{255, 255, 255, 230};
// Every other rank's lanes are shaded; a rule separates two ranks.
inline const QColor kLaneShade{128, 128, 128, 18};
inline const QColor kRankRule{128, 128, 128, 110};

// The sweep's best bucket size.
inline const QColor kBestMark = kCommHidden.darker(130);
// The sweep's predicted step-time curve (what-if replay, dashed) and its band: Okabe–Ito sky blue,
// the measured step time's hue made lighter.
inline const QColor kPredicted{0x56, 0xB4, 0xE9};
inline const QColor kPredictedBand{0x56, 0xB4, 0xE9, 60};

// The light theme of exported figures (white background, dark text).
inline const QColor kLightBackground{Qt::white};
inline const QColor kLightForeground{0x22, 0x22, 0x22};
inline const QColor kLightGrid{0xE3, 0xE3, 0xE3};
// Text items on an exported chart (the sweep's "current" and "best" labels).
inline const QColor kExportLabel{Qt::black};
// A figure's table (TableRow): the rule under its header, every other row's shade, the notes.
inline const QColor kExportRule{0x88, 0x88, 0x88};
inline const QColor kExportStripe{0xF2, 0xF2, 0xF2};
inline const QColor kExportNote{0x55, 0x55, 0x55};

// The dark theme of the window (Settings ▸ theme "dark").
inline const QColor kDarkThemeWindow{0x2B, 0x2B, 0x2B};
inline const QColor kDarkThemeBase{0x1E, 0x1E, 0x1E};
inline const QColor kDarkThemeButton{0x35, 0x35, 0x35};
inline const QColor kDarkThemeText{0xE6, 0xE6, 0xE6};
inline const QColor kDarkThemeMid{0x60, 0x60, 0x60};
}  // namespace colours

// The badge of a run whose numbers do not cover the whole run (LoadedRun::incomplete()).
inline const QString kIncompleteBadge = QStringLiteral("INCOMPLETE");
// A small warning marker (orange disc with "!"), for list items.
QIcon warningIcon();

// The colour of a draw style (timeline_model.h Style).
QColor styleColour(std::uint16_t style);
// The colour of a collective kind (colours::kAllReduce ...); kCommUnknown for Unknown and None.
QColor collectiveKindColour(analysis::CollectiveKind kind);
// The colour of bucket `id` (solid).
QColor bucketColour(std::int32_t id);
// Dark or light text that reads on `fill`.
QColor textOn(const QColor& fill);

// "SIMULATED", "CUDA", "PREDICTED", "IMPORTED" or "MIXED" for a run's source string.
QString sourceBadge(std::string_view source);
QColor badgeColour(std::string_view source);

// The application's palette for a theme setting: "system" leaves the system's, "light" and
// "dark" set Fusion's with the theme's colours.
void applyAppTheme(const QString& theme);

}  // namespace ddpscope::ui
