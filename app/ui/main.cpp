// ddpscope: the desktop app. `ddpscope [PATH...]` opens the GUI (the bundled sample run when no
// path is given); `ddpscope --export FILE.{png,svg,pdf} PATH...` renders the default view and
// exits; `ddpscope --report DIR PATH...` writes the design report of one run and exits;
// `ddpscope --compare A B` opens two runs side by side in the Compare tab, and with `--export
// FILE` writes that tab's chart and exits.

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <cstring>
#include <optional>

#include "app/analysis/digest_reader.h"
#include "app/ui/app_modes.h"
#include "app/ui/main_window.h"
#include "tracer/format/memory.h"

namespace {
QtMessageHandler g_default_handler = nullptr;
// Offscreen rendering makes Qt chatter about things that do not matter there.
void quietMessages(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (message.contains(QLatin1String("propagateSizeHints")) ||
      message.contains(QLatin1String("XDG_RUNTIME_DIR")))
    return;
  if (g_default_handler) g_default_handler(type, context, message);
}

// --export, --report and --screenshots run without a window (offscreen), whatever the display.
bool runsHeadless(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--export") || !std::strncmp(argv[i], "--export=", 9) ||
        !std::strcmp(argv[i], "--screenshots") || !std::strncmp(argv[i], "--screenshots=", 14) ||
        !std::strcmp(argv[i], "--report") || !std::strncmp(argv[i], "--report=", 9))
      return true;
  return false;
}

void addOptions(QCommandLineParser& parser) {
  parser.setApplicationDescription(QStringLiteral(
      "Profiler for data-parallel training: overlap of gradient allreduce with compute."));
  parser.addHelpOption();
  parser.addOption(
      {QStringLiteral("export"),
       QStringLiteral("Render the default view (with --compare: the Compare tab's chart; of a run "
                      "digest: its heatmap) to FILE (.png, .svg or .pdf) and exit."),
       QStringLiteral("FILE")});
  parser.addOption(
      {QStringLiteral("figure"),
       QStringLiteral("With --export of a run digest: the heatmap's figure, step (default), "
                      "exposed or wait (waiting for late ranks)."),
       QStringLiteral("NAME")});
  parser.addOption(
      {QStringLiteral("step"),
       QStringLiteral("With --export: the timeline of step N on every rank (with --compare: "
                      "both runs aligned at step N)."),
       QStringLiteral("N")});
  parser.addOption({QStringLiteral("scale"),
                    QStringLiteral("PNG scale factor for --export (default 2)."),
                    QStringLiteral("S"), QStringLiteral("2")});
  parser.addOption(
      {QStringLiteral("report"),
       QStringLiteral("Write the design report of the run in PATH... (report.md, report.html and "
                      "figures) to DIR and exit."),
       QStringLiteral("DIR")});
  parser.addOption({QStringLiteral("compare"),
                    QStringLiteral("Open the two runs A and B (files or folders) and show them in "
                                   "the Compare tab (with --export, write its chart).")});
  parser.addOption(
      {QStringLiteral("skip-unreadable"),
       QStringLiteral("With --export, --report or --screenshots: leave out the trace files that "
                      "cannot be read (their ranks then have no trace; a window asks instead).")});
  parser.addOption({QStringLiteral("screenshots"),
                    QStringLiteral("Render the main views to DIR and exit."),
                    QStringLiteral("DIR")});
  parser.addPositionalArgument(QStringLiteral("PATH"),
                               QStringLiteral("Trace files (one per rank) or run folders."),
                               QStringLiteral("[PATH...]"));
}
// --scale for --export; none (said on stderr) when it is not a number from 0.5 to 8: below half
// size the text of a figure cannot be read, above 8 a figure is hundreds of MB.
std::optional<double> exportScale(const QCommandLineParser& parser) {
  bool ok = false;
  const double scale = parser.value(QStringLiteral("scale")).toDouble(&ok);
  if (ok && scale >= 0.5 && scale <= 8) return scale;
  std::fprintf(stderr, "ddpscope: --scale must be a number from 0.5 to 8, got '%s'\n",
               qPrintable(parser.value(QStringLiteral("scale"))));
  return std::nullopt;
}
}  // namespace

int main(int argc, char** argv) {
  ddpscope::trace::tuneAllocatorForTraces();
  using namespace ddpscope::ui;
  const bool display = hasDisplay();
  if (runsHeadless(argc, argv) || !display) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    g_default_handler = qInstallMessageHandler(quietMessages);
  }

  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("ddpscope"));
  QApplication::setOrganizationName(QStringLiteral("ddpscope"));
  QCommandLineParser parser;
  addOptions(parser);
  // A flag it does not know is a usage error (exit 2, as every other), named.
  if (!parser.parse(QCoreApplication::arguments())) {
    std::fprintf(stderr, "ddpscope: %s (ddpscope --help lists the options)\n",
                 parser.errorText().toLocal8Bit().constData());
    return 2;
  }
  parser.process(app);  // --help, --help-all
  ddpscope::ui::setSkipUnreadableFiles(parser.isSet(QStringLiteral("skip-unreadable")));
  QStringList paths = parser.positionalArguments();

  const bool compare = parser.isSet(QStringLiteral("compare"));
  const bool exporting = parser.isSet(QStringLiteral("export"));
  const bool headless = exporting || parser.isSet(QStringLiteral("report")) ||
                        parser.isSet(QStringLiteral("screenshots"));
  if (compare && (parser.isSet(QStringLiteral("report")) ||
                  parser.isSet(QStringLiteral("screenshots")) || (!exporting && !display))) {
    std::fprintf(stderr,
                 "ddpscope: --compare shows two runs in the Compare tab of a window: it needs a "
                 "display, or --export FILE to write that tab's chart without one; it does not "
                 "combine with --report or --screenshots\n");
    return 2;
  }
  if (compare && paths.size() != 2) {
    std::fprintf(stderr, "ddpscope: --compare takes two runs, A and B; got %lld\n",
                 static_cast<long long>(paths.size()));
    return 2;
  }
  // A run digest opens in the window's Digest tab; --export writes its heatmap; the other modes
  // without a window render traces.
  const bool one_digest = paths.size() == 1 && QFileInfo(paths.front()).isFile() &&
                          ddpscope::analysis::isDigestFile(paths.front().toStdString());
  std::optional<ddpscope::analysis::DigestFigure> figure;
  if (parser.isSet(QStringLiteral("figure"))) {
    using ddpscope::analysis::DigestFigure;
    const QString f = parser.value(QStringLiteral("figure"));
    const std::pair<const char*, DigestFigure> names[] = {{"step", DigestFigure::StepTime},
                                                          {"exposed", DigestFigure::ExposedComm},
                                                          {"wait", DigestFigure::MatchedWait}};
    for (const auto& [name, which] : names)
      if (f == QLatin1String(name)) figure = which;
    if (!figure) {
      std::fprintf(stderr, "ddpscope: --figure is step, exposed or wait, got '%s'\n",
                   qPrintable(f));
      return 2;
    }
    if (!exporting || compare || !one_digest) {
      std::fprintf(stderr,
                   "ddpscope: --figure goes with --export of one run digest (the heatmap's "
                   "figure)\n");
      return 2;
    }
  }
  if (exporting && !compare && one_digest && !parser.isSet(QStringLiteral("step"))) {
    const auto scale = exportScale(parser);
    if (!scale) return 2;
    return exportDigestHeadless(parser.value(QStringLiteral("export")), paths.front(), *scale,
                                figure);
  }
  // Compare's chart takes digests (a table of figures, no lanes): exportCompareHeadless.
  if ((headless && !(compare && exporting)) || (!display && !headless))
    for (const QString& p : paths)
      if (QFileInfo(p).isFile() && ddpscope::analysis::isDigestFile(p.toStdString())) {
        if (headless) {
          std::fprintf(stderr,
                       "ddpscope: %s is a run digest (ddpscope-cli digest), not a trace: open it "
                       "in the app's window (the Digest tab), give it alone to --export "
                       "(without --step) for its heatmap, or with another run to --compare "
                       "--export for their figures side by side; --report and --screenshots "
                       "take traces\n",
                       qPrintable(p));
        } else {
          std::fprintf(stderr,
                       "ddpscope: %s is a run digest (ddpscope-cli digest): it opens in the app's "
                       "window (the Digest tab), which needs a display (none was found: set "
                       "DISPLAY or WAYLAND_DISPLAY); without one, `ddpscope-cli summary` and "
                       "`ddpscope-cli digest` give its figures from the traces\n",
                       qPrintable(p));
        }
        return 2;
      }

  std::optional<int> step;
  if (parser.isSet(QStringLiteral("step"))) {
    bool ok = false;
    const int n = parser.value(QStringLiteral("step")).toInt(&ok);
    if (!ok || n < 0) {
      std::fprintf(stderr, "ddpscope: --step must be a step number (0 or more), got '%s'\n",
                   qPrintable(parser.value(QStringLiteral("step"))));
      return 2;
    }
    if (!exporting) {
      std::fprintf(stderr,
                   "ddpscope: --step goes with --export (the figure of one step); in the window, "
                   "the search bar's \"Go to step\" shows a step\n");
      return 2;
    }
    step = n;
  }
  if (parser.isSet(QStringLiteral("export"))) {
    const auto scale = exportScale(parser);
    if (!scale) return 2;
    if (compare)
      return exportCompareHeadless(parser.value(QStringLiteral("export")), paths[0], paths[1],
                                   *scale, step);
    return exportHeadless(parser.value(QStringLiteral("export")), paths, *scale, step);
  }
  if (parser.isSet(QStringLiteral("report")))
    return reportHeadless(parser.value(QStringLiteral("report")), paths);
  if (paths.isEmpty()) paths << sampleRunPath();
  if (parser.isSet(QStringLiteral("screenshots")))
    return writeScreenshots(parser.value(QStringLiteral("screenshots")), paths);
  if (!display) return renderWithoutDisplay(paths);

  MainWindow window;
  window.show();
  if (compare) {
    window.openForComparison(paths[0], paths[1]);
  } else {
    window.openPaths(paths);
  }
  return app.exec();
}
