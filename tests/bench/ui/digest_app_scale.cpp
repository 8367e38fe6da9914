// The app at scale, as a user drives it: open a run digest in the main window (offscreen), time
// it, redraw its heatmap with every figure, load some ranks' full traces from the Digest tab, and
// report the process's resident memory at each point. docs/PERFORMANCE.md, "A thousand ranks".
//
// Usage: digest_app_scale DIGEST [RANKS]   (RANKS: a rank list, default "0-3")
// The digest's trace files are looked for next to it, as the app does.
#include <QApplication>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "app/ui/digest_heatmap.h"
#include "app/ui/digest_view.h"
#include "app/ui/loaded_run.h"
#include "app/ui/main_window.h"
#include "app/ui/session.h"
#include "qcustomplot.h"
#include "tests/ui/ui_test_app.h"

namespace {
using ddpscope::ui::testing::waitFor;

// VmRSS and VmHWM of this process, in MiB.
std::pair<double, double> residentMiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  double rss = 0, hwm = 0;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::stod(line.substr(6)) / 1024;
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::stod(line.substr(6)) / 1024;
  }
  return {rss, hwm};
}

void report(const char* what, double ms = -1) {
  const auto [rss, hwm] = residentMiB();
  if (ms >= 0)
    std::printf("%-44s %9.1f ms   resident %7.1f MiB (peak %7.1f)\n", what, ms, rss, hwm);
  else
    std::printf("%-44s %12s   resident %7.1f MiB (peak %7.1f)\n", what, "", rss, hwm);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIGEST [RANKS]\n", argv[0]);
    return 2;
  }
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QStandardPaths::setTestModeEnabled(true);
  QTemporaryDir settings;
  qputenv("DDPSCOPE_SETTINGS", settings.filePath("ddpscope.ini").toLocal8Bit());
  QApplication app(argc, argv);
  const QString digest = QString::fromLocal8Bit(argv[1]);
  const QString ranks = argc > 2 ? QString::fromLocal8Bit(argv[2]) : QStringLiteral("0-3");
  report("started");

  ddpscope::ui::MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.resize(1500, 950);
  w.show();
  QCoreApplication::processEvents();
  report("window shown");

  auto* view = w.digestView();
  QElapsedTimer t;
  t.start();
  w.openPaths({digest});
  if (!waitFor([&] { return view->digest() != nullptr; }, 60000)) {
    std::fprintf(stderr, "the digest did not open: %s\n", qPrintable(w.lastError()));
    return 1;
  }
  QCoreApplication::processEvents();
  report("digest open (read, parse, heatmap)", static_cast<double>(t.nsecsElapsed()) / 1e6);
  std::printf("  %zu ranks x %zu steps\n", view->heatmap()->grid().ranks.size(),
              view->heatmap()->grid().steps.size());

  // Each figure chosen, then drawn: median of 9 rounds over the figures.
  const ddpscope::analysis::DigestFigure figures[] = {
      ddpscope::analysis::DigestFigure::StepTime, ddpscope::analysis::DigestFigure::ExposedComm,
      ddpscope::analysis::DigestFigure::MatchedWait};
  std::vector<double> redraws;
  for (int round = 0; round < 9; ++round) {
    for (const auto f : figures) {
      t.restart();
      view->setFigure(f);
      view->heatmap()->plot()->replot(QCustomPlot::rpImmediateRefresh);
      redraws.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    }
  }
  std::sort(redraws.begin(), redraws.end());
  report("heatmap redraw, a figure chosen (median)", redraws[redraws.size() / 2]);

  view->setRankSelectionText(ranks);
  t.restart();
  view->loadSelected();
  if (!waitFor([&] { return !w.session()->runs().empty(); }, 600000)) {
    std::fprintf(stderr, "the ranks did not load: %s\n", qPrintable(w.lastError()));
    return 1;
  }
  QCoreApplication::processEvents();
  const auto run = w.session()->current();
  std::size_t events = 0;
  for (const auto& r : run->run.ranks)
    for (const auto& tr : r.tracks)
      events += tr.size();
  char what[96];
  std::snprintf(what, sizeof what, "ranks %s loaded (%zu ranks, %zu events)", qPrintable(ranks),
                run->run.ranks.size(), events);
  report(what, static_cast<double>(t.nsecsElapsed()) / 1e6);
  // The smallest window the views now allow (a long label or a wide table raises it; a desktop
  // grows the window to it).
  std::printf("  window's minimum %d x %d\n", w.minimumSizeHint().width(),
              w.minimumSizeHint().height());
  return 0;
}
