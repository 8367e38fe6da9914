// The Digest tab (app/ui/digest_view.h): a digest of a simulated run with a late rank opens as a
// ranks × steps heatmap holding the digest's numbers, names the late rank, loads the ranks
// selected on it as a run (and frees them on close), says which file is missing, and a big run
// is offered as a digest.
// The agent first: Qt defines `slots`, a name the agent's headers use.
#include "agent/run_agent.h"

#include <gtest/gtest.h>
#include <qcustomplot.h>
#include <simdjson.h>

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMouseEvent>
#include <QTabWidget>
#include <QTemporaryDir>
#include <atomic>
#include <filesystem>

#include "app/analysis/digest.h"
#include "app/analysis/digest_reader.h"
#include "app/ui/app_settings.h"
#include "app/ui/compare_panel.h"
#include "app/ui/digest_heatmap.h"
#include "app/ui/digest_job.h"
#include "app/ui/digest_view.h"
#include "app/ui/main_window.h"
#include "app/ui/session.h"
#include "tests/ui/ui_test_app.h"
#include "tracer/format/file_io.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;

namespace {

// `ddpscope-agent --backend sim --world-size 8 --steps 4 --straggler-rank 3
// --straggler-slowdown 1.5` (in process, a smaller model), its ranks' traces and the digest of
// them, `run.digest.json.gz`, in one folder.
struct DigestedRun {
  QTemporaryDir dir;
  QString digest;
  std::string json;

  DigestedRun() {
    agent::AgentOptions o;
    o.world_size = 8;
    o.steps = 4;
    o.model.layers = 4;
    o.cost.straggler_rank = 3;
    o.cost.straggler_slowdown = 1.5;
    o.out_dir = "unused";
    for (const auto& r : agent::runSimulation(o).ranks)
      trace::writeTraceFile(
          r, dir.filePath(QStringLiteral("rank-%1.json.gz").arg(r.rank)).toStdString());
    json = analysis::digestRun({dir.path().toStdString()}, {});
    digest = dir.filePath(QStringLiteral("run.digest.json.gz"));
    trace::writeFileAtomically(digest.toStdString(), trace::gzipBytes(json));
  }
};

std::unique_ptr<MainWindow> window() {
  static QTemporaryDir settings_dir;
  qputenv("DDPSCOPE_SETTINGS", settings_dir.filePath("ddpscope.ini").toLocal8Bit());
  app();
  auto w = std::make_unique<MainWindow>();
  w->setErrorDialogsEnabled(false);
  w->resize(1500, 950);
  w->show();
  return w;
}

// Microseconds per unit of the heatmap's colour scale.
double microsPer(const QString& unit) {
  return unit == QLatin1String("s") ? 1e6 : unit == QLatin1String("ms") ? 1e3 : 1.0;
}

void sendMouse(QWidget* w, QEvent::Type type, QPoint at, Qt::MouseButtons buttons) {
  QMouseEvent e(type, at, w->mapToGlobal(at),
                type == QEvent::MouseMove ? Qt::NoButton : Qt::LeftButton, buttons, Qt::NoModifier);
  QApplication::sendEvent(w, &e);
}

}  // namespace

TEST(DigestView, SequentialScaleDarkensEvenly) {
  for (const QColor& hue : {QColor(0x00, 0x72, 0xB2), QColor(0xD5, 0x5E, 0x00)}) {
    double previous = 2;
    for (int i = 0; i <= 20; ++i) {
      const QColor c = sequentialColour(hue, i / 20.0);
      // Relative luminance: what the scale's order rests on without colour vision.
      const double y = 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF();
      EXPECT_LT(y, previous) << i;
      previous = y;
      if (i == 0) {
        EXPECT_GT(y, 0.85);
      }
      if (i == 20) {
        EXPECT_LT(y, 0.25);
      }
    }
  }
  // The scale passes close to the hue itself (the palette's colour is on it).
  const QColor blue(0x00, 0x72, 0xB2);
  int best = 255 * 3;
  for (int i = 0; i <= 100; ++i) {
    const QColor c = sequentialColour(blue, i / 100.0);
    best = std::min(best, std::abs(c.red() - blue.red()) + std::abs(c.green() - blue.green()) +
                              std::abs(c.blue() - blue.blue()));
  }
  EXPECT_LT(best, 40);
}

// One rank, or one step: every cell is drawn in its value's colour (a map one cell wide was
// drawn as nothing).
TEST(DigestView, ASingleRankOrStepIsDrawn) {
  app();
  for (const auto& [ranks, steps] : {std::pair{1, 3}, std::pair{4, 1}, std::pair{1, 1}}) {
    analysis::DigestGrid grid;
    for (int s = 0; s < steps; ++s)
      grid.steps.push_back(s + 4);
    for (int r = 0; r < ranks; ++r)
      grid.ranks.push_back(r);
    for (int i = 0; i < ranks * steps; ++i)
      grid.cells.push_back(analysis::TimeNs{1'000'000} * (i + 1));
    grid.min_ns = grid.cells.front();
    grid.max_ns = grid.cells.back();
    DigestHeatmap map;
    map.resize(600, 400);
    map.setGrid(grid, QColor(0x00, 0x72, 0xB2));
    QCustomPlot* plot = map.plot();
    const QImage image = plot->toPixmap(600, 400).toImage();
    for (int r = 0; r < ranks; ++r)
      for (int c = 0; c < steps; ++c) {
        const double v =
            map.drawnValue(static_cast<std::size_t>(r), static_cast<std::size_t>(c)).value_or(-1);
        const QColor want(map.colourMap()->gradient().color(v, map.colourMap()->dataRange()));
        // A quarter of a cell off its centre: inside the cell, clear of the ticks' labels.
        const QColor got = image.pixelColor(static_cast<int>(plot->xAxis->coordToPixel(c + 0.25)),
                                            static_cast<int>(plot->yAxis->coordToPixel(r + 0.25)));
        EXPECT_LE(std::abs(got.red() - want.red()) + std::abs(got.green() - want.green()) +
                      std::abs(got.blue() - want.blue()),
                  12)
            << ranks << " x " << steps << " cell " << r << "," << c << ": got "
            << got.name().toStdString() << ", want " << want.name().toStdString();
      }
  }
}

// Ranks without a step (traces without step markers): the map says why it has no cell, and
// shows no colour scale of no values.
TEST(DigestView, RanksWithoutStepsAreSaidNotDrawnEmpty) {
  app();
  analysis::DigestGrid grid;
  grid.ranks = {0, 1};
  DigestHeatmap map;
  map.resize(600, 400);
  map.setGrid(grid, QColor(0x00, 0x72, 0xB2));
  EXPECT_TRUE(map.saysNoSteps());
  EXPECT_FALSE(map.colourScale()->visible());
  grid.steps = {4};
  grid.cells = {analysis::TimeNs{1'000}, analysis::TimeNs{2'000}};
  grid.min_ns = 1'000;
  grid.max_ns = 2'000;
  map.setGrid(grid, QColor(0x00, 0x72, 0xB2));
  EXPECT_FALSE(map.saysNoSteps());
  EXPECT_TRUE(map.colourScale()->visible());
}

// Every cell on the scale the same (no rank waited, all steps alike): a scale of one colour says
// nothing, so its label gives the value.
TEST(DigestView, AScaleOfOneValueSaysIt) {
  app();
  analysis::DigestGrid grid;
  grid.figure = analysis::DigestFigure::MatchedWait;
  grid.ranks = {0, 1};
  grid.steps = {4, 5};
  grid.cells.assign(4, analysis::TimeNs{0});
  grid.min_ns = 0;
  grid.max_ns = 0;
  DigestHeatmap map;
  map.setGrid(grid, QColor(0xD5, 0x5E, 0x00));
  EXPECT_TRUE(map.scaleLabel().endsWith(QStringLiteral(": every cell on the scale 0 ns")))
      << map.scaleLabel().toStdString();
  EXPECT_EQ(map.colourScale()->axis()->label(), map.scaleLabel());
  grid.cells[3] = 2'000;
  grid.max_ns = 2'000;
  map.setGrid(grid, QColor(0xD5, 0x5E, 0x00));
  EXPECT_FALSE(map.scaleLabel().contains(QStringLiteral("every cell")));
}

TEST(DigestView, RankLists) {
  EXPECT_EQ(rankListText({0, 1, 2, 3, 7, 9, 10}), QStringLiteral("0–3, 7, 9–10"));
  QString error;
  EXPECT_EQ(parseRankList(QStringLiteral("5, 1-2,3–3"), &error),
            (std::vector<std::int32_t>{1, 2, 3, 5}));
  EXPECT_FALSE(parseRankList(QStringLiteral("1, x"), &error));
  EXPECT_EQ(error, QStringLiteral("'x' is not a rank or a range of ranks"));
  EXPECT_FALSE(parseRankList(QStringLiteral("4-2"), &error));
  EXPECT_FALSE(parseRankList(QString(), &error));
  EXPECT_EQ(error, QStringLiteral("no rank selected"));
}

TEST(DigestView, OpensADigestAndLoadsTheRanksSelected) {
  DigestedRun run;
  auto w = window();
  w->openPaths({run.digest});
  DigestView* view = w->digestView();
  ASSERT_TRUE(waitFor([&] { return view->digest() != nullptr; })) << w->lastError().toStdString();
  EXPECT_EQ(w->tabs()->currentWidget(), view);
  EXPECT_TRUE(w->session()->runs().empty());  // no trace was loaded

  // Every cell is the digest's own step time (parsed here on its own).
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(run.json);
  simdjson::dom::array ranks = doc["ranks"];
  DigestHeatmap* map = view->heatmap();
  ASSERT_EQ(map->grid().ranks.size(), 8u);
  ASSERT_EQ(map->grid().steps.size(), 4u);
  const double per = microsPer(map->unit());
  std::size_t row = 0;
  for (simdjson::dom::element rank : ranks) {
    EXPECT_EQ(map->grid().ranks[row], int64_t(rank["rank"]));
    std::size_t column = 0;
    for (simdjson::dom::element st : rank["steps"].get_array()) {
      EXPECT_EQ(map->grid().steps[column], int64_t(st["step"]));
      const auto drawn = map->drawnValue(row, column);
      ASSERT_TRUE(drawn);
      EXPECT_NEAR(*drawn * per, double(st["dur_us"]), 1e-6 * double(st["dur_us"]));
      ++column;
    }
    ++row;
  }
  // Exposed communication: the same, on the vermillion scale.
  view->setFigure(analysis::DigestFigure::ExposedComm);
  const double per_exposed = microsPer(map->unit());
  simdjson::dom::element r5 = ranks.at(5);
  EXPECT_NEAR(map->drawnValue(5, 2).value_or(-1) * per_exposed,
              double(r5["steps"].at(2)["exposed_comm_us"]), 1e-3);
  view->setFigure(analysis::DigestFigure::StepTime);

  // The headline is the run's: the same words as loading every trace gives.
  const auto full =
      analysis::summarizeRun(analysis::analyzeRun(trace::loadRun({run.dir.path().toStdString()})));
  const auto fig = analysis::runFigureText(full);
  EXPECT_TRUE(view->headlineText().contains(QString::fromStdString("step " + fig.step)))
      << view->headlineText().toStdString();
  EXPECT_TRUE(view->headlineText().contains(QString::fromStdString("overlap " + fig.overlap)));
  // The simulated straggler is named.
  EXPECT_TRUE(view->lateRankText().startsWith(QStringLiteral("Late rank: rank 3, ")))
      << view->lateRankText().toStdString();

  // File ▸ Export current chart on this tab: the heatmap as a figure whose title carries the
  // figure shown, the headline and the late rank (the SVG's text); nothing without a digest.
  {
    QTemporaryDir out;
    const QString svg_path = out.filePath(QStringLiteral("heatmap.svg"));
    QString error;
    ASSERT_TRUE(w->exportView(QStringLiteral("chart"), svg_path, 1.0, &error))
        << error.toStdString();
    QFile svg(svg_path);
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(svg.readAll());
    for (const QString& part :
         {QStringLiteral("DIGEST"), QStringLiteral("step time per rank (rows) and step (columns)"),
          QString::fromStdString("overlap " + fig.overlap), QStringLiteral("Late rank: rank 3, ")})
      EXPECT_TRUE(text.contains(part.toHtmlEscaped())) << part.toStdString();
    // The headline's figures and the steps they cover on lines of their own: as one line they
    // were wider than the heatmap's column and cut at both ends.
    const QStringList lines = view->exportTitle().split(QLatin1Char('\n'));
    EXPECT_FALSE(view->exportTitle().contains(QStringLiteral("INCOMPLETE")));  // every rank, whole
    EXPECT_TRUE(lines.contains(QString::fromStdString(fig.scope))) << lines.join('|').toStdString();
    for (const QString& line : lines)
      EXPECT_FALSE(line.contains(QStringLiteral(" — "))) << line.toStdString();
    // The title is centred on the whole figure, not on the map's column beside the colour scale
    // (there a long line ran off the left edge): its first line's ink has even margins.
    const QString png_path = out.filePath(QStringLiteral("heatmap.png"));
    ASSERT_TRUE(w->exportView(QStringLiteral("chart"), png_path, 1.0, &error))
        << error.toStdString();
    const QImage png(png_path);
    int left = png.width(), right = -1;
    for (int y = 0; y < 14; ++y)
      for (int x = 0; x < png.width(); ++x)
        if (qGray(png.pixel(x, y)) < 128) {
          left = std::min(left, x);
          right = std::max(right, x);
        }
    ASSERT_GT(right, left);
    EXPECT_LT(std::abs(left - (png.width() - 1 - right)), 12)
        << left << " " << right << " of " << png.width();
    DigestView empty;
    EXPECT_FALSE(empty.exportChart(out.filePath(QStringLiteral("none.png")), 1.0, &error));
    EXPECT_EQ(error, QStringLiteral("no digest is open in the Digest tab"));
    EXPECT_FALSE(QFile::exists(out.filePath(QStringLiteral("none.png"))));
  }

  // Hovering a cell names it.
  QCustomPlot* plot = map->plot();
  plot->replot();
  const QPoint cell(static_cast<int>(plot->xAxis->coordToPixel(1)),
                    static_cast<int>(plot->yAxis->coordToPixel(3)));
  ASSERT_EQ(map->cellAt(cell), (std::pair<std::size_t, std::size_t>{3, 1}));
  EXPECT_TRUE(map->cellText(3, 1).startsWith(
      QStringLiteral("rank 3 · step %1 · step time ").arg(map->grid().steps[1])));
  // The warm-up step is drawn, hatched, and said to be left out of the run's figures.
  ASSERT_EQ(map->grid().left_out, (std::vector<char>{1, 0, 0, 0}));
  EXPECT_TRUE(map->cellText(3, 0).contains(QStringLiteral("(left out of the run's figures)")));
  EXPECT_FALSE(map->cellText(3, 1).contains(QStringLiteral("left out")));
  EXPECT_EQ(plot->xAxis->label(), QStringLiteral("step (hatched: left out of the run's figures)"));

  // A rectangle dragged over ranks 2 and 3 selects them.
  const QPoint from(static_cast<int>(plot->xAxis->coordToPixel(0)),
                    static_cast<int>(plot->yAxis->coordToPixel(2)));
  const QPoint to(static_cast<int>(plot->xAxis->coordToPixel(2)),
                  static_cast<int>(plot->yAxis->coordToPixel(3)));
  sendMouse(plot, QEvent::MouseButtonPress, from, Qt::LeftButton);
  sendMouse(plot, QEvent::MouseMove, (from + to) / 2, Qt::LeftButton);
  sendMouse(plot, QEvent::MouseMove, to, Qt::LeftButton);
  sendMouse(plot, QEvent::MouseButtonRelease, to, Qt::NoButton);
  EXPECT_EQ(map->selectedRanks(), (std::vector<std::int32_t>{2, 3}));
  EXPECT_EQ(view->rankSelectionText(), QStringLiteral("2–3"));

  // Loading them: a run of exactly those ranks, through the normal loading path.
  view->loadSelected();
  ASSERT_TRUE(waitFor([&] { return !w->session()->runs().empty(); }))
      << w->lastError().toStdString();
  std::weak_ptr<const LoadedRun> loaded = w->session()->current();
  ASSERT_EQ(loaded.lock()->run.ranks.size(), 2u);
  EXPECT_EQ(loaded.lock()->run.ranks[0].rank, 2);
  EXPECT_EQ(loaded.lock()->run.ranks[1].rank, 3);
  EXPECT_EQ(w->tabs()->currentWidget(), view);  // the digest stays where it was
  // Nothing the loaded ranks show (an incomplete run, a late rank, long notes) asks for a window
  // wider than a laptop's screen: the notes wrap, long chips clip. (Offscreen, a window is not
  // grown to its minimum as on a desktop: the minimum is what is checked.)
  QApplication::processEvents();
  EXPECT_LE(w->minimumSizeHint().width(), 1366);
  // Closing the run frees its traces.
  w->session()->closeRun(w->session()->currentIndex());
  EXPECT_TRUE(waitFor([&] { return loaded.expired(); }));

  // A rank whose file is gone: the message names the file.
  QFile::remove(run.dir.filePath(QStringLiteral("rank-5.json.gz")));
  view->setRankSelectionText(QStringLiteral("4-5"));
  view->loadSelected();
  EXPECT_EQ(w->lastError(), QStringLiteral("the trace file rank-5.json.gz of rank 5 is in none of "
                                           "%1 (nor their subfolders): add the folder that holds "
                                           "it (Trace folders… in the Digest tab)")
                                .arg(QFileInfo(run.digest).absolutePath()));
  // Kept in a folder of its own (another node's), it is found once that folder is added.
  QDir(run.dir.path()).mkpath(QStringLiteral("elsewhere/node1"));
  const QString moved = run.dir.filePath(QStringLiteral("elsewhere/node1/rank-4.json.gz"));
  ASSERT_TRUE(QFile::rename(run.dir.filePath(QStringLiteral("rank-4.json.gz")), moved));
  view->setRankSelectionText(QStringLiteral("4"));
  view->loadSelected();
  EXPECT_TRUE(w->lastError().contains(QStringLiteral("rank-4.json.gz of rank 4 is in none of")))
      << w->lastError().toStdString();
  view->addTraceFolder(run.dir.filePath(QStringLiteral("elsewhere")));
  EXPECT_EQ(view->folders().size(), 2);
  const auto before_moved = w->session()->runs().size();
  view->loadSelected();
  ASSERT_TRUE(waitFor([&] { return w->session()->runs().size() == before_moved + 1; }))
      << w->lastError().toStdString();
  EXPECT_EQ(w->session()->current()->run.ranks.at(0).rank, 4);
  w->session()->closeRun(w->session()->currentIndex());
  view->setRankSelectionText(QStringLiteral("12"));
  view->loadSelected();
  EXPECT_EQ(w->lastError(), QStringLiteral("the digest has no rank 12"));
  // A rank whose file is not the size the digest states: refused, naming the file.
  const QString six = run.dir.filePath(QStringLiteral("rank-6.json.gz"));
  const qint64 six_bytes = QFileInfo(six).size();
  {
    QFile f(six);
    ASSERT_TRUE(f.open(QIODevice::Append));
    f.write("x");
  }
  const auto loads = w->session()->runs().size();
  view->setRankSelectionText(QStringLiteral("6"));
  view->loadSelected();
  EXPECT_EQ(w->lastError(), QStringLiteral("the trace file rank-6.json.gz of rank 6 (%1) has "
                                           "changed since the digest was made (%2 bytes; the "
                                           "digest says %3): make the digest again")
                                .arg(six)
                                .arg(six_bytes + 1)
                                .arg(six_bytes));
  EXPECT_EQ(w->session()->runs().size(), loads);

  // The view as the docs show it: the waits, rank 3's row light (the others waited for it).
  view->setFigure(analysis::DigestFigure::MatchedWait);
  map->selectRows(2, 3);
  EXPECT_EQ(view->rankSelectionText(), QStringLiteral("2–3"));
  view->resize(1100, 620);
  const QString png = QDir(run.dir.path()).filePath(QStringLiteral("digest_view.png"));
  ASSERT_TRUE(view->grab().save(png));
  if (const QByteArray out = qgetenv("DDPSCOPE_DIGEST_SCREENSHOT"); !out.isEmpty())
    QFile::copy(png, QString::fromLocal8Bit(out));
}

// The late rank of a digest missing ranks of its world: not denied, since the late rank may be
// among those missing (the straggler, rank 3, left out); one found among the rest is said to be
// of those; and a digest of one rank has no collective to match.
TEST(DigestView, ALateRankIsNotDeniedWhenRanksAreMissing) {
  app();
  DigestedRun run;
  const auto file = [&](int r) {
    return run.dir.filePath(QStringLiteral("rank-%1.json.gz").arg(r)).toStdString();
  };
  DigestView view;
  const auto show = [&](const std::vector<std::string>& files) {
    view.setDigest(std::make_shared<const analysis::Digest>(
                       analysis::parseDigest(analysis::digestRun(files, {}), "d.json")),
                   QStringLiteral("d.json"), {});
  };
  show({file(0), file(1), file(2), file(4)});
  EXPECT_TRUE(view.lateRankText().startsWith(QStringLiteral(
      "No late rank can be named: the digest has no trace of ranks 3, 5–7 of the world")))
      << view.lateRankText().toStdString();
  // The ranks without a trace are rows of their own, grey, saying so; a drag over them selects
  // only the ranks that can be loaded.
  auto* map = view.heatmap();
  ASSERT_EQ(map->grid().ranks, (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(map->grid().no_trace, (std::vector<char>{0, 0, 0, 1, 0, 1, 1, 1}));
  EXPECT_FALSE(map->drawnValue(3, 1).has_value());
  EXPECT_TRUE(map->drawnValue(4, 1).has_value());
  EXPECT_TRUE(map->cellText(3, 1).startsWith(QStringLiteral("rank 3 · no trace")))
      << map->cellText(3, 1).toStdString();
  map->selectRows(2, 5);
  EXPECT_EQ(map->selectedRanks(), (std::vector<std::int32_t>{2, 4}));
  EXPECT_EQ(view.rankSelectionText(), QStringLiteral("2, 4"));
  EXPECT_TRUE(view.figureNoteText().contains(QStringLiteral("Grey rows")));
  EXPECT_TRUE(view.exportTitle().contains(QStringLiteral("grey rows: no trace")));
  // Ranks of a simulated run without a trace: INCOMPLETE, as the run loaded from the same files.
  EXPECT_TRUE(view.exportTitle().startsWith(
      QStringLiteral("d.json · DIGEST · SIMULATED · INCOMPLETE · 4 of 8 ranks")))
      << view.exportTitle().toStdString();
  // Without every rank, waiting is not told from transfer: that figure cannot be chosen.
  EXPECT_FALSE(view.setFigure(analysis::DigestFigure::MatchedWait));
  // The export says that the digest warns (of the missing ranks).
  EXPECT_TRUE(
      view.exportTitle().contains(QStringLiteral(" in the digest (the Digest tab shows them")))
      << view.exportTitle().toStdString();
  // Rank 3 and two others: rank 3 is late among them, and the text says of which ranks.
  show({file(0), file(3), file(5)});
  EXPECT_TRUE(view.lateRankText().startsWith(QStringLiteral("Late rank: rank 3, ")))
      << view.lateRankText().toStdString();
  EXPECT_TRUE(view.lateRankText().contains(
      QStringLiteral("(among the ranks with a trace; ranks 1–2, 4, 6–7 of the world have no "
                     "trace, and a later rank may be among them)")))
      << view.lateRankText().toStdString();
  // A digest made before the late rank was kept, of 1 of 2 ranks: what it lacks is a rank, not
  // a newer digest (making it again would name no late rank either).
  view.setDigest(std::make_shared<const analysis::Digest>(
                     analysis::readDigest(DDPSCOPE_TEST_DATA "/digest/resnet50.digest.json")),
                 QStringLiteral("resnet50.digest.json"), {});
  EXPECT_TRUE(view.lateRankText().startsWith(
      QStringLiteral("No late rank can be named: the digest has no trace of rank 1 of the world")))
      << view.lateRankText().toStdString();
  // A digest of every rank warns of nothing, and has no grey row.
  show({run.dir.path().toStdString()});
  EXPECT_FALSE(view.exportTitle().contains(QStringLiteral("⚠")))
      << view.exportTitle().toStdString();
  EXPECT_FALSE(view.figureNoteText().contains(QStringLiteral("Grey rows")));
  EXPECT_EQ(map->grid().no_trace, std::vector<char>(8, 0));
  // The waiting figure says it counts waits hidden under compute too.
  ASSERT_TRUE(view.setFigure(analysis::DigestFigure::MatchedWait));
  EXPECT_TRUE(view.figureNoteText().contains(QStringLiteral("hidden under compute or not")))
      << view.figureNoteText().toStdString();
  EXPECT_TRUE(view.exportTitle().contains(QStringLiteral(", hidden under compute or not")));
}

TEST(DigestView, NothingToOpenSaysSo) {
  const DigestResult made = openDigestBlocking({}, true);
  EXPECT_FALSE(made.digest);
  EXPECT_EQ(made.error, QStringLiteral("no trace files or run folders given to digest"));
  const DigestResult read = openDigestBlocking({}, false);
  EXPECT_FALSE(read.digest);
  EXPECT_EQ(read.error, QStringLiteral("no digest file given to read"));
}

// A digest made with its cancel flag set reads no file; a DigestJob started again drops the
// superseded job's result and reports only the new one's; one destroyed while making returns.
TEST(DigestView, ASupersededDigestIsCancelledAndDropped) {
  DigestedRun run;
  app();
  std::atomic<bool> cancel{true};
  int progressed = 0;
  const DigestResult cancelled = openDigestBlocking(
      {run.dir.path()}, true, [&](double) { ++progressed; }, &cancel);
  EXPECT_FALSE(cancelled.digest);
  EXPECT_EQ(cancelled.error, QStringLiteral("the digest was cancelled"));
  EXPECT_EQ(progressed, 0);

  DigestJob job;
  std::vector<DigestResult> opened;
  int failed = 0, finished = 0;
  QObject::connect(&job, &DigestJob::opened, [&](const DigestResult& r) { opened.push_back(r); });
  QObject::connect(&job, &DigestJob::failed, [&](const QString&) { ++failed; });
  QObject::connect(&job, &DigestJob::finished, [&] { ++finished; });
  job.make({run.dir.path()});
  job.read(run.digest);
  ASSERT_TRUE(waitFor([&] { return finished > 0; }));
  QCoreApplication::processEvents();
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(failed, 0);
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened[0].file, run.digest);  // the read, not the digest made
  EXPECT_FALSE(job.busy());

  auto doomed = std::make_unique<DigestJob>();
  bool doomed_reported = false;
  QObject::connect(doomed.get(), &DigestJob::finished, [&] { doomed_reported = true; });
  doomed->make({run.dir.path()});
  EXPECT_TRUE(doomed->busy());
  doomed.reset();
  QCoreApplication::processEvents();
  EXPECT_FALSE(doomed_reported);
}

// A rank's own warnings (a digest keeps them per rank) are counted and quoted under the headline,
// and given in full when a cell of its row is hovered; other rows have none.
TEST(DigestView, ARanksOwnWarningsAreShownAndOnItsRow) {
  DigestedRun run;
  std::string json = run.json;
  const auto rank5 = json.find("\"rank\": 5,");
  ASSERT_NE(rank5, std::string::npos);
  const std::string none = "\"warnings\": []";
  const auto at = json.find(none, rank5);
  ASSERT_NE(at, std::string::npos);
  json.replace(at, none.size(),
               "\"warnings\": [\"its trace lost 7 records\", \"a second thing to know\"]");
  const QString path = run.dir.filePath(QStringLiteral("warned.digest.json"));
  trace::writeFileAtomically(path.toStdString(), json);
  auto w = window();
  w->openPaths({path});
  DigestView* view = w->digestView();
  ASSERT_TRUE(waitFor([&] { return view->digest() != nullptr; })) << w->lastError().toStdString();
  EXPECT_TRUE(view->warningsText().contains(
      QStringLiteral("1 rank with warnings of its own (hover a rank's row for all of them): "
                     "rank 5: its trace lost 7 records (and 1 more)")))
      << view->warningsText().toStdString();
  DigestHeatmap* map = view->heatmap();
  ASSERT_EQ(map->grid().ranks[5], 5);
  EXPECT_TRUE(map->cellText(5, 0).endsWith(
      QStringLiteral("\n⚠ its trace lost 7 records\n⚠ a second thing to know")))
      << map->cellText(5, 0).toStdString();
  EXPECT_FALSE(map->cellText(4, 0).contains(QStringLiteral("⚠")));
  // Still there with another figure drawn.
  view->setFigure(analysis::DigestFigure::ExposedComm);
  EXPECT_TRUE(map->cellText(5, 1).contains(QStringLiteral("⚠ a second thing to know")));
}

TEST(DigestView, ABadDigestSaysWhy) {
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("bad.digest.json"));
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write("{\"ddpscope_digest\": 7, \"run\": {}}");
  f.close();
  auto w = window();
  w->openPaths({path});
  ASSERT_TRUE(waitFor([&] { return !w->lastError().isEmpty(); }));
  EXPECT_TRUE(w->lastError().contains(QStringLiteral("digest version 7 is not supported")))
      << w->lastError().toStdString();
  EXPECT_TRUE(w->lastError().contains(path));
  EXPECT_EQ(w->digestView()->digest(), nullptr);
}

TEST(DigestView, ABigRunIsOfferedAsADigest) {
  DigestedRun run;
  QFile::remove(run.digest);  // the folder holds the traces only
  auto w = window();
  settings::setDigestOfferRanks(4);
  settings::setDigestOfferGB(0);
  QString asked;
  w->setDigestOfferAnswer([&](const QString& reason) {
    asked = reason;
    return true;
  });
  w->openPaths({run.dir.path()});
  ASSERT_TRUE(waitFor([&] { return w->digestView()->digest() != nullptr; }))
      << w->lastError().toStdString();
  EXPECT_EQ(asked, QStringLiteral("8 trace files, more than 4"));
  EXPECT_TRUE(w->session()->runs().empty());
  // The digest made in the app is the one the command line makes.
  const auto from_cli = analysis::parseDigest(run.json, "cli");
  const auto& made = *w->digestView()->digest();
  ASSERT_EQ(made.ranks.size(), from_cli.ranks.size());
  for (std::size_t i = 0; i < made.ranks.size(); ++i)
    for (std::size_t s = 0; s < made.ranks[i].steps.size(); ++s)
      EXPECT_EQ(made.ranks[i].steps[s].dur_ns, from_cli.ranks[i].steps[s].dur_ns);
  EXPECT_TRUE(w->digestView()->lateRankText().startsWith(QStringLiteral("Late rank: rank 3, ")));
  // Its ranks load from the run's folder.
  w->digestView()->setRankSelectionText(QStringLiteral("0"));
  w->digestView()->loadSelected();
  ASSERT_TRUE(waitFor([&] { return !w->session()->runs().empty(); }))
      << w->lastError().toStdString();
  EXPECT_EQ(w->session()->current()->run.ranks.size(), 1u);

  // Declined, or under the threshold: the run loads whole.
  w->setDigestOfferAnswer([](const QString&) { return false; });
  w->openPaths({run.dir.path()});
  ASSERT_TRUE(waitFor([&] { return w->session()->runs().size() == 2; }));
  EXPECT_EQ(w->session()->current()->run.ranks.size(), 8u);
  settings::setDigestOfferRanks(8);
  EXPECT_EQ(w->digestOfferReason({run.dir.path()}), QString());
  settings::setDigestOfferGB(1e-6);
  EXPECT_TRUE(w->digestOfferReason({run.dir.path()}).contains(QStringLiteral("GB of traces")));
  settings::setDigestOfferGB(0);
  settings::setDigestOfferRanks(0);
}

// A digest opened in the Digest tab is offered in Compare, beside the runs: against the trace it
// was made from, every row reads the same (the figures from the digest and from the trace are one
// definition); no lanes are drawn for it, the note says so and that a version-1 digest's
// settings were not compared; a run against a run draws lanes again.
TEST(DigestView, ADigestComparesWithARunInTheCompareTab) {
  const QString trace = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");
  const QString digest = QStringLiteral(DDPSCOPE_TEST_DATA "/digest/resnet50.digest.json");
  auto w = window();
  w->openPaths({trace});
  ASSERT_TRUE(waitFor([&] { return !w->session()->runs().empty(); }));
  w->openPaths({digest});
  ASSERT_TRUE(waitFor([&] { return w->digestView()->digest() != nullptr; }))
      << w->lastError().toStdString();
  ComparePanel* c = w->comparePanel();
  ASSERT_EQ(c->runBoxA()->count(), 2);
  EXPECT_EQ(c->runBoxB()->itemText(1), QStringLiteral("resnet50.digest.json [digest]"));
  const int d = c->digestIndex(QFileInfo(digest).canonicalFilePath());
  ASSERT_EQ(d, 1);
  c->setRuns(0, d);
  ASSERT_TRUE(c->runA() && c->digestB());
  EXPECT_FALSE(c->runB());
  ASSERT_GT(c->rows().size(), 4u);
  for (const auto& r : c->rows()) {
    EXPECT_EQ(r.a, r.b) << r.metric;
    if (r.metric == "step time") {
      EXPECT_EQ(r.a, "222 ms");
    }
  }
  EXPECT_TRUE(c->stepNote().startsWith(QStringLiteral("No lanes: B is read from its digest.")))
      << c->stepNote().toStdString();
  EXPECT_TRUE(c->stepNote().contains(QStringLiteral("Settings not compared for B")))
      << c->stepNote().toStdString();
  EXPECT_EQ(c->plot()->plottableCount(), 0);
  // No axis lines around no lanes (an open box read as lanes cut off).
  EXPECT_FALSE(c->plot()->axisRect(1)->axis(QCPAxis::atLeft)->visible());
  const FigureTable table = c->figureTable();
  ASSERT_EQ(table.above.size(), 2);
  EXPECT_TRUE(table.above[1].startsWith(
      QStringLiteral("B: resnet50.digest.json — from its digest · imported")))
      << table.above[1].toStdString();
  QByteArray png;
  QString error;
  ASSERT_TRUE(c->renderChart(ExportFormat::Png, 1, &png, &error)) << error.toStdString();
  EXPECT_GT(png.size(), 1000);
  // The design report carries the comparison with the digest side: its name and configuration,
  // the table and the chart.
  EXPECT_TRUE(c->twoSides());
  QTemporaryDir out;
  ASSERT_TRUE(w->exportReport(out.filePath(QStringLiteral("report")), &error))
      << error.toStdString();
  const QDir report(out.filePath(QStringLiteral("report")));
  QFile md(report.filePath(QStringLiteral("report.md")));
  ASSERT_TRUE(md.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(md.readAll());
  EXPECT_TRUE(text.contains(QStringLiteral("B: resnet50.digest.json (from its digest · imported")))
      << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("compare.png"))) << text.toStdString();
  EXPECT_TRUE(report.exists(QStringLiteral("compare.png")));
  // Two runs again: their lanes, on a time axis with its numbers.
  c->setRuns(0, 0);
  EXPECT_FALSE(c->twoSides());  // A against A: no comparison for a report
  EXPECT_GT(c->plot()->plottableCount(), 0);
  EXPECT_TRUE(c->plot()->axisRect(0)->axis(QCPAxis::atBottom)->tickLabels());
  EXPECT_TRUE(c->plot()->axisRect(0)->axis(QCPAxis::atBottom)->visible());
  EXPECT_TRUE(c->plot()->axisRect(1)->axis(QCPAxis::atLeft)->visible());
  EXPECT_FALSE(c->digestA() || c->digestB());
}
