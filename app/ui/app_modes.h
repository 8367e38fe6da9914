#pragma once
// The ways the executable runs besides the interactive window: headless export, screenshots for
// the docs, and rendering to a PNG when there is no display.

#include <QString>
#include <QStringList>
#include <optional>

#include "app/analysis/digest_reader.h"

namespace ddpscope::ui {

// The bundled sample run opened when no trace is given (one constant; replaced later by an
// agent-made run).
QString sampleRunPath();

// True when a window can be shown: DISPLAY, WAYLAND_DISPLAY or an explicit QT_QPA_PLATFORM.
bool hasDisplay();
// Whether the modes without a window leave out the trace files that cannot be read
// (`--skip-unreadable`; a window asks instead). Off by default.
void setSkipUnreadableFiles(bool on);

// `ddpscope --export FILE [--step N] PATH...`: renders the default timeline view to FILE
// (.png/.svg/.pdf), or with a step, the timeline of step N (analysis::stepWindow: its earliest
// start to its latest end on any rank, titled with that window's own figures). Returns the exit
// status (2 when the run has no step N, naming the steps it has); errors go to stderr.
int exportHeadless(const QString& file, const QStringList& paths, double scale,
                   std::optional<int> step = std::nullopt);

// `ddpscope --compare --export FILE [--step N] A B`: opens the runs A and B (each a trace file or
// a run folder) as the Compare tab shows them, aligned at step N when given, and writes that
// tab's chart to FILE. Exit status 0, 1 (cannot load or write) or 2 (bad file name, or a step
// the two runs do not share); errors go to stderr.
int exportCompareHeadless(const QString& file, const QString& a, const QString& b, double scale,
                          std::optional<int> step = std::nullopt);

// `ddpscope --export FILE [--figure step|exposed|wait] DIGEST`: the Digest tab's heatmap of a
// run digest (step time unless `figure` says otherwise) written to FILE, titled with the digest's
// headline figures and late rank. Exit status 0, 1 (cannot read the digest or write) or 2 (bad
// file name); errors go to stderr.
int exportDigestHeadless(const QString& file, const QString& digest, double scale,
                         std::optional<analysis::DigestFigure> figure = std::nullopt);

// `ddpscope --report DIR PATH...`: writes the design report of the run in PATH... (report.md,
// report.html, figures) to DIR, as the Run menu's "Export design report" does. Exit status
// 0, 1 (cannot load or write) or 2 (bad arguments); errors go to stderr.
int reportHeadless(const QString& dir, const QStringList& paths);

// Renders the main views of a run to DIR (the screenshots in docs/screenshots).
int writeScreenshots(const QString& dir, const QStringList& paths);

// Without a display: renders the main window's view to a PNG and says where.
int renderWithoutDisplay(const QStringList& paths);

}  // namespace ddpscope::ui
