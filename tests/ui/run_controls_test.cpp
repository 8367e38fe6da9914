// Relaunch, sweep, compare and report, driven through the real GUI with the simulated agent
// (DDPSCOPE_AGENT), headless. Failing and cancelled agents must leave the runs already open intact.
#include <gtest/gtest.h>

#include <qcustomplot.h>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QMenu>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextStream>
#include <csignal>

#include "app/analysis/report_json.h"
#include "app/analysis/sweep.h"
#include "app/ui/app_settings.h"
#include "app/ui/compare_panel.h"
#include "app/ui/main_window.h"
#include "app/ui/plot_export.h"
#include "app/ui/run_list_panel.h"
#include "app/ui/run_panel.h"
#include "app/ui/session.h"
#include "app/ui/sweep_panel.h"
#include "tests/ui/ui_test_app.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;

namespace {
const QString kAgent = QStringLiteral(DDPSCOPE_AGENT);
const QString kResnet = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");

// A small, quick configuration: 4 ranks of an 8 x 1024 MLP (8.4 M parameters), 5 steps.
RunParameters smallRun(double bucket_mb) {
  RunParameters p;
  p.backend = QStringLiteral("sim");
  p.world_size = 4;
  p.bucket_mb = bucket_mb;
  p.first_bucket_mb = std::min(1.0, bucket_mb);
  applyModelPreset(p, QStringLiteral("mlp"));
  p.steps = 5;
  return p;
}

struct Fixture {
  QTemporaryDir traces;
  std::unique_ptr<MainWindow> window;
  MainWindow* controls = nullptr;  // the window: its run panel, Sweep and Compare

  explicit Fixture(const QString& agent = kAgent, const QString& launcher = QString()) {
    // Settings of this process only: ctest runs these tests in parallel processes.
    static QTemporaryDir settings_dir;
    qputenv("DDPSCOPE_SETTINGS", settings_dir.filePath("ddpscope.ini").toLocal8Bit());
    app();
    settings::setAgentPath(agent);
    settings::setLauncherTemplate(launcher);
    settings::setTracesFolder(traces.path());
    window = std::make_unique<MainWindow>();
    window->setErrorDialogsEnabled(false);
    window->resize(1500, 950);
    controls = window.get();
    window->show();
  }
  Session* session() const { return window->session(); }
  RunPanel* panel() const { return controls->runPanel(); }

  // An earlier run the failures must not touch: resnet50 opened through the GUI.
  void openEarlierRun() {
    window->openPaths({kResnet});
    ASSERT_TRUE(waitFor([&] { return session()->runs().size() == 1; }));
  }
  void runOnce(const RunParameters& p) {
    panel()->setParameters(p);
    panel()->startRun();
    ASSERT_TRUE(panel()->busy());
    ASSERT_TRUE(waitFor([&] { return !panel()->busy(); }, 60000));
  }
};

QString writeScript(const QTemporaryDir& dir, const QString& name, const QString& body) {
  const QString path = dir.filePath(name);
  QFile f(path);
  EXPECT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(("#!/bin/sh\n" + body).toUtf8());
  f.close();
  f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  return path;
}

// A process that no longer runs (gone, or a zombie waiting for its reaper).
bool processEnded(qint64 pid) {
  QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
  if (!stat.open(QIODevice::ReadOnly)) return true;
  const QByteArray s = stat.readAll();
  const qsizetype close = s.lastIndexOf(')');
  return close > 0 && close + 2 < s.size() && (s[close + 2] == 'Z' || s[close + 2] == 'X');
}

QString readAll(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(f.readAll());
}
}  // namespace

TEST(RunControls, LauncherTemplateIsSplitIntoArgumentsAndFilledIn) {
  QString error;
  const auto c = expandLauncher(
      QStringLiteral("mpirun -np {world} --hostfile {hostfile} {agent} {args}"),
      QStringLiteral("/opt/my tools/ddpscope-agent"),
      {QStringLiteral("--world-size"), QStringLiteral("16"), QStringLiteral("--out"),
       QStringLiteral("/shared/runs/it's here")},
      16, QStringLiteral("/etc/hosts file"), QStringLiteral("/shared/runs/it's here"), &error);
  ASSERT_TRUE(c.has_value()) << error.toStdString();
  EXPECT_EQ(c->program, QStringLiteral("mpirun"));
  EXPECT_EQ(c->arguments, (QStringList{"-np", "16", "--hostfile", "/etc/hosts file",
                                       "/opt/my tools/ddpscope-agent", "--world-size", "16",
                                       "--out", "/shared/runs/it's here"}));
  // Placeholders inside an argument, and a quoted template argument with a space.
  const auto s =
      expandLauncher(QStringLiteral("srun --ntasks={world} \"--job-name=ddp scope\" "
                                    "{agent} {args}"),
                     QStringLiteral("agent"), {QStringLiteral("--steps")}, 4, {}, {}, &error);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->arguments, (QStringList{"--ntasks=4", "--job-name=ddp scope", "agent", "--steps"}));
  // The displayed command quotes what a shell would need, for the reader only.
  EXPECT_EQ(displayCommand(*s),
            QStringLiteral("srun --ntasks=4 '--job-name=ddp scope' agent --steps"));
  EXPECT_FALSE(expandLauncher(QStringLiteral("mpirun -np 4"), "a", {}, 4, {}, {}, &error));
  EXPECT_TRUE(error.contains("{agent}"));
  // No template: the agent itself.
  const auto direct = expandLauncher({}, "agent", {"--steps", "3"}, 1, {}, {}, &error);
  ASSERT_TRUE(direct.has_value());
  EXPECT_EQ(direct->program, "agent");
  EXPECT_EQ(direct->arguments, (QStringList{"--steps", "3"}));
}

TEST(RunControls, AgentArgumentsFollowTheParameters) {
  RunParameters p = smallRun(0);
  p.overlap = false;
  p.fusion = QStringLiteral("copy");
  const QStringList a = agentArguments(p, QStringLiteral("/tmp/x"));
  EXPECT_EQ(a.join(' '),
            QStringLiteral("--backend sim --world-size 4 --bucket-mb 0 --first-bucket-mb 0 "
                           "--fusion copy --model mlp --layers 8 --hidden 1024 --steps 5 "
                           "--no-overlap --out /tmp/x"));
  EXPECT_EQ(runLabel(p), QStringLiteral("b0 no-ov copy"));
}

TEST(RunControls, RunOpensAsANewRunAndRemembersItsParameters) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(f.openEarlierRun());
  const auto earlier = f.session()->runs().front();
  // The run panel sits in the left column, under the runs list.
  const auto* runs_list = f.window->findChild<RunListPanel*>();
  ASSERT_NE(runs_list, nullptr);
  EXPECT_EQ(f.panel()->parentWidget(), runs_list->parentWidget());
  int last_step = 0, steps = 0;
  QObject::connect(f.panel()->progressBar(), &QProgressBar::valueChanged,
                   [&](int v) { last_step = std::max(last_step, v); });
  const RunParameters p = smallRun(2);
  f.runOnce(p);
  steps = f.panel()->progressBar()->maximum();
  ASSERT_EQ(f.session()->runs().size(), 2u) << f.panel()->lastError().toStdString();
  EXPECT_EQ(f.session()->runs().front(), earlier);
  const auto run = f.session()->current();
  ASSERT_TRUE(run);
  EXPECT_EQ(run->name, QStringLiteral("b2 ov view"));
  EXPECT_EQ(run->source(), "sim");
  EXPECT_EQ(run->run.ranks.size(), 4u);
  EXPECT_EQ(run->report.ranks.front().steps.size(), 5u);
  EXPECT_EQ(run->run.ranks.front().ddpscope.configValue("bucket_mb"), "2");
  EXPECT_EQ(last_step, 5);
  EXPECT_EQ(steps, 5);
  // The exact command, and a trace folder under the traces folder.
  EXPECT_TRUE(f.panel()->lastCommand().startsWith(kAgent + " --backend sim --world-size 4"))
      << f.panel()->lastCommand().toStdString();
  EXPECT_TRUE(run->paths.front().startsWith(f.traces.path()));
  EXPECT_TRUE(QFileInfo::exists(run->paths.front() + "/rank-3.json.gz"));
  // Settings persist: a new window's run panel starts from the last run's parameters.
  EXPECT_EQ(settings::lastRunParameters(), p);
  MainWindow other;
  EXPECT_EQ(other.runPanel()->parameters(), p);
  // No GPU here: the CUDA backend is not offered (the agent's probe exits 3).
  if (qEnvironmentVariableIsEmpty("DDPSCOPE_EXPECT_GPU")) {
    ASSERT_TRUE(waitFor([&] { return !f.panel()->probing(); }));
    EXPECT_FALSE(f.panel()->cudaAvailable());
    EXPECT_EQ(f.panel()->backendBox()->findData(QStringLiteral("cuda")), -1);
  }
}

// "From selected run": the knobs a run was made with, read back from its traces; a run the agent
// did not make has none, and the button says so by being off.
TEST(RunControls, SettingsAreTakenFromTheSelectedRun) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(f.openEarlierRun());
  EXPECT_FALSE(f.panel()->fromRunButton()->isEnabled());
  EXPECT_FALSE(f.panel()->takeCurrentRunsSettings());
  EXPECT_TRUE(f.panel()->statusText().contains("was not made by the agent"))
      << f.panel()->statusText().toStdString();
  RunParameters p = smallRun(3.5);
  p.world_size = 3;
  p.first_bucket_mb = 0.5;
  p.overlap = false;
  p.fusion = QStringLiteral("copy");
  p.layers = 3;
  p.hidden = 320;
  p.steps = 2;
  f.runOnce(p);
  ASSERT_EQ(f.session()->runs().size(), 2u) << f.panel()->lastError().toStdString();
  f.panel()->setParameters(RunParameters{});
  ASSERT_NE(f.panel()->parameters(), p);
  EXPECT_TRUE(f.panel()->fromRunButton()->isEnabled());
  f.panel()->fromRunButton()->click();
  EXPECT_EQ(f.panel()->parameters(), p);
  EXPECT_TRUE(f.panel()->statusText().contains("Settings of"))
      << f.panel()->statusText().toStdString();
  f.session()->setCurrent(0);  // the ResNet-50 trace again
  EXPECT_FALSE(f.panel()->fromRunButton()->isEnabled());

  // A block that lacks a setting, or holds one of another type, gives none.
  trace::RankTrace rank = f.session()->runs().back()->run.ranks.front();
  ASSERT_TRUE(runParametersOf(rank));
  for (auto& [key, value] : rank.ddpscope.config) {
    if (key == "overlap") value = "1";
  }
  EXPECT_FALSE(runParametersOf(rank));
  rank = f.session()->runs().back()->run.ranks.front();
  std::erase_if(rank.ddpscope.config, [](const auto& kv) { return kv.first == "steps"; });
  EXPECT_FALSE(runParametersOf(rank));
}

TEST(RunControls, LauncherTemplateRunsTheAgentAndShowsTheExactCommand) {
  // `env` stands in for mpirun/srun: a launcher that takes a placeholder inside an argument (a
  // hostfile path with a space stays one argument) and then the agent with its arguments.
  Fixture f(kAgent, QStringLiteral("env DDPSCOPE_HOSTFILE={hostfile} {agent} {args}"));
  settings::setHostfile(QStringLiteral("/shared/my hosts"));
  ASSERT_NO_FATAL_FAILURE(f.openEarlierRun());
  f.panel()->refreshFromSettings();
  f.panel()->setUseLauncher(true);
  f.runOnce(smallRun(4));
  ASSERT_EQ(f.session()->runs().size(), 2u) << f.panel()->lastError().toStdString();
  EXPECT_EQ(f.session()->current()->name, QStringLiteral("b4 ov view"));
  const QString command = f.panel()->lastCommand();
  EXPECT_TRUE(command.startsWith("env 'DDPSCOPE_HOSTFILE=/shared/my hosts' " + kAgent +
                                 " --backend sim --world-size 4 --bucket-mb 4"))
      << command.toStdString();
  settings::setHostfile({});
}

TEST(RunControls, AgentRejectingItsArgumentsLeavesTheRunsIntact) {
  // Through a launcher template, so the exact command shown is the launcher's: the real agent
  // gets an option it does not know and exits 2.
  Fixture f(kAgent, QStringLiteral("{agent} {args} --no-such-option"));
  ASSERT_NO_FATAL_FAILURE(f.openEarlierRun());
  const auto earlier = f.session()->runs();
  auto p = smallRun(1);
  f.panel()->setUseLauncher(true);
  ASSERT_TRUE(f.panel()->useLauncher());
  f.runOnce(p);
  const QString error = f.panel()->lastError();
  EXPECT_TRUE(error.contains("exit status 2 (bad arguments)")) << error.toStdString();
  EXPECT_TRUE(error.contains("no-such-option")) << error.toStdString();
  EXPECT_TRUE(f.panel()->lastCommand().startsWith(kAgent + " --backend sim"));
  EXPECT_TRUE(f.panel()->lastCommand().endsWith(" --no-such-option"));
  EXPECT_TRUE(error.contains(f.panel()->lastCommand()));
  EXPECT_EQ(f.session()->runs(), earlier);
  EXPECT_EQ(f.session()->currentIndex(), 0);
}

TEST(RunControls, FailingAgentShowsItsExitStatusAndStderrTail) {
  QTemporaryDir bin;
  const QString fake =
      writeScript(bin, "fake-agent",
                  "echo '{\"event\":\"progress\",\"step\":1,\"steps\":5}'\n"
                  "i=0; while [ $i -lt 300 ]; do echo \"noise line $i\" >&2; i=$((i+1)); done\n"
                  "echo 'ddpscope-agent: out of virtual memory on rank 3' >&2\nexit 7\n");
  Fixture f(fake);
  ASSERT_NO_FATAL_FAILURE(f.openEarlierRun());
  const auto earlier = f.session()->runs();
  f.runOnce(smallRun(1));
  EXPECT_EQ(f.session()->runs(), earlier);
  EXPECT_EQ(f.session()->current(), earlier.front());
  const QString error = f.panel()->lastError();
  EXPECT_TRUE(error.contains("exit status 7")) << error.toStdString();
  EXPECT_TRUE(error.contains("out of virtual memory on rank 3")) << error.toStdString();
  EXPECT_FALSE(error.contains("noise line 0\n"));  // only the tail
  EXPECT_TRUE(f.panel()->statusText().contains("exit status 7"));
  EXPECT_TRUE(f.panel()->runButton()->isEnabled());
}

TEST(RunControls, AgentThatCannotStartIsReported) {
  Fixture f(QStringLiteral("/nonexistent/ddpscope-agent"));
  ASSERT_NO_FATAL_FAILURE(f.openEarlierRun());
  f.runOnce(smallRun(1));
  EXPECT_EQ(f.session()->runs().size(), 1u);
  EXPECT_TRUE(f.panel()->lastError().contains("could not start"))
      << f.panel()->lastError().toStdString();
}

TEST(RunControls, CancelEndsTheWholeProcessGroupAndKeepsTheRuns) {
  QTemporaryDir bin;
  const QString pidfile = bin.filePath("child.pid");
  const QString fake =
      writeScript(bin, "slow-agent",
                  "sleep 300 &\necho $! > '" + pidfile +
                      "'\n"
                      "echo '{\"event\":\"progress\",\"step\":1,\"steps\":20}'\nwait\n");
  Fixture f(fake);
  ASSERT_NO_FATAL_FAILURE(f.openEarlierRun());
  const auto earlier = f.session()->runs();
  f.panel()->setParameters(smallRun(1));
  f.panel()->startRun();
  ASSERT_TRUE(waitFor([&] { return QFileInfo(pidfile).size() > 0; }));
  ASSERT_TRUE(waitFor([&] { return f.panel()->progressBar()->value() == 1; }));
  const qint64 child = readAll(pidfile).trimmed().toLongLong();
  ASSERT_GT(child, 0);
  EXPECT_FALSE(processEnded(child));
  f.panel()->cancelRun();
  ASSERT_TRUE(waitFor([&] { return !f.panel()->busy(); }));
  // The launcher's child (same process group) ended too.
  EXPECT_TRUE(waitFor([&] { return processEnded(child); }, 5000));
  if (!processEnded(child)) ::kill(static_cast<pid_t>(child), SIGKILL);
  EXPECT_EQ(f.session()->runs(), earlier);
  EXPECT_TRUE(f.panel()->statusText().contains("cancelled"));
  EXPECT_TRUE(f.panel()->lastError().isEmpty());
  // The cancelled run's folder is removed; the traces folder is otherwise untouched.
  EXPECT_TRUE(QDir(f.traces.path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot).isEmpty());
}

TEST(RunControls, SweepCompareAndReport) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(f.openEarlierRun());
  const auto earlier = f.session()->runs().front();
  f.panel()->setParameters(smallRun(25));
  SweepPanel* sweep = f.controls->sweepPanel();
  EXPECT_EQ(sweep->sizes(), analysis::defaultSweepSizes());
  sweep->setSizes({0, 4, 64});
  EXPECT_EQ(sweep->parallelism(), 2);
  sweep->start();
  ASSERT_TRUE(sweep->busy());
  ASSERT_TRUE(waitFor([&] { return !sweep->busy(); }, 120000));
  ASSERT_TRUE(sweep->errors().isEmpty()) << sweep->errors().join('\n').toStdString();
  // Three runs opened beside the earlier one; three points on each curve.
  ASSERT_EQ(f.session()->runs().size(), 4u);
  EXPECT_EQ(f.session()->runs().front(), earlier);
  QCustomPlot* chart = sweep->chart();
  ASSERT_EQ(chart->graphCount(), 3);
  for (int g = 0; g < 3; ++g)
    EXPECT_EQ(chart->graph(g)->dataCount(), 3) << g;
  // The same best as recommendBucketSize over those runs' reports.
  std::vector<analysis::SweepPoint> mine;
  for (std::size_t i = 1; i < 4; ++i) {
    const auto& run = f.session()->runs()[i];
    analysis::SweepPoint p;
    p.bucket_mb = QString::fromStdString(
                      std::string(run->run.ranks.front().ddpscope.configValue("bucket_mb")))
                      .toDouble();
    p.summary = analysis::summarizeRun(run->report);
    mine.push_back(p);
  }
  const auto expected = analysis::recommendBucketSize(mine, 25);
  ASSERT_TRUE(sweep->recommendation().has_value());
  EXPECT_EQ(sweep->recommendation()->best_mb, expected.best_mb);
  EXPECT_EQ(sweep->recommendationText().toStdString(), expected.text);
  const auto& pts = sweep->points();
  ASSERT_EQ(pts.size(), 3u);
  EXPECT_EQ(pts[0].bucket_mb, 0);
  EXPECT_EQ(pts[2].bucket_mb, 64);
  std::size_t best = 0;
  for (std::size_t i = 1; i < 3; ++i)
    if (pts[i].summary.step_ns < pts[best].summary.step_ns) best = i;
  EXPECT_EQ(expected.best_mb, pts[best].bucket_mb);
  EXPECT_DOUBLE_EQ(chart->graph(0)->data()->at(static_cast<int>(best))->value,
                   static_cast<double>(pts[best].summary.step_ns) / 1e6);
  // Per tensor (0 MB) sits left of the smallest size, inside the log axis, labelled.
  const double zero_x = sweep->chartX(0);
  EXPECT_GT(zero_x, 0);
  EXPECT_LT(zero_x, 4);
  EXPECT_TRUE(chart->xAxis->range().contains(zero_x));
  EXPECT_EQ(chart->xAxis->scaleType(), QCPAxis::stLogarithmic);
  auto ticker = chart->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
  ASSERT_TRUE(ticker);
  EXPECT_EQ(ticker->ticks().value(zero_x), QStringLiteral("per tensor"));
  // The best size is marked with a line at its x.
  bool marked = false;
  for (int i = 0; i < chart->itemCount(); ++i)
    if (auto* line = qobject_cast<QCPItemStraightLine*>(chart->item(i)))
      marked = marked || line->point1->coords().x() == sweep->chartX(expected.best_mb);
  EXPECT_TRUE(marked);

  // Compare: per tensor (A) against 64 MB (B), aligned at step 2.
  ComparePanel* compare = f.controls->comparePanel();
  int per_tensor = -1, big = -1;
  for (int i = 0; i < static_cast<int>(f.session()->runs().size()); ++i) {
    const auto& r = f.session()->runs()[static_cast<std::size_t>(i)];
    if (r->name == "sweep b0 ov view") per_tensor = i;
    if (r->name == "sweep b64 ov view") big = i;
  }
  ASSERT_GE(per_tensor, 0);
  ASSERT_GE(big, 0);
  compare->setRuns(per_tensor, big);
  compare->setStep(2);
  EXPECT_EQ(compare->step(), 2);
  const auto rows = compare->rows();
  const auto want = analysis::compareRuns(f.session()->runs()[per_tensor]->report,
                                          f.session()->runs()[big]->report);
  ASSERT_EQ(rows.size(), want.size());
  const QAbstractItemModel* table = compare->table()->model();
  ASSERT_EQ(table->rowCount(), static_cast<int>(want.size()));
  for (std::size_t i = 0; i < want.size(); ++i) {
    const int r = static_cast<int>(i);
    EXPECT_EQ(table->index(r, 0).data().toString().toStdString(), want[i].metric);
    EXPECT_EQ(table->index(r, 3).data().toString().toStdString(), want[i].delta);
  }
  // Fused: far fewer allreduces per step than one per tensor.
  EXPECT_GT(rows[3].a_value, rows[3].b_value);
  // Both runs on one time axis: the same offset from their own step 2 start.
  QCustomPlot* cp = compare->plot();
  ASSERT_EQ(cp->axisRectCount(), 2);
  const QCPRange ra = cp->axisRect(0)->axis(QCPAxis::atBottom)->range();
  const QCPRange rb = cp->axisRect(1)->axis(QCPAxis::atBottom)->range();
  EXPECT_NEAR(ra.lower - static_cast<double>(compare->stepStart(false)),
              rb.lower - static_cast<double>(compare->stepStart(true)), 1.0);
  EXPECT_NEAR(ra.size(), rb.size(), 1.0);
  // Panning one pans the other.
  cp->axisRect(0)->axis(QCPAxis::atBottom)->moveRange(1000.0);
  const QCPRange rb2 = cp->axisRect(1)->axis(QCPAxis::atBottom)->range();
  EXPECT_NEAR(rb2.lower - rb.lower, 1000.0, 1e-3);
  EXPECT_GT(cp->axisRect(0)->plottables().size(), 3);
  EXPECT_GT(cp->axisRect(1)->plottables().size(), 3);

  // Report of the current run (the last sweep run) with all three figures.
  QTemporaryDir out;
  const QString dir = out.filePath("review folder");
  QString error;
  ASSERT_TRUE(f.controls->exportReport(dir, &error)) << error.toStdString();
  for (const char* name : {"report.md", "report.html", "timeline.png", "sweep.png", "compare.png"})
    EXPECT_GT(QFileInfo(QDir(dir).filePath(name)).size(), 100) << name;
  const QString md = readAll(QDir(dir).filePath("report.md"));
  const QString html = readAll(QDir(dir).filePath("report.html"));
  const auto current = analysis::summarizeRun(f.session()->current()->report);
  const QString step_time = QString::fromStdString(analysis::formatDuration(current.step_ns));
  EXPECT_TRUE(md.contains(step_time)) << step_time.toStdString();
  EXPECT_TRUE(md.contains(QString::fromStdString(expected.text)));
  EXPECT_TRUE(md.contains("sweep.png"));
  EXPECT_TRUE(md.contains("compare.png"));
  EXPECT_TRUE(md.contains(QString::fromStdString(want[0].delta)));
  EXPECT_TRUE(md.contains("SIMULATED"));
  EXPECT_TRUE(html.contains(step_time));
  EXPECT_TRUE(html.contains("timeline.png"));
  QImage sweep_png(QDir(dir).filePath("sweep.png"));
  EXPECT_GT(sweep_png.width(), 800);
  // A folder that cannot be made: a message, and nothing half-written.
  EXPECT_FALSE(f.controls->exportReport("/proc/no-such/report", &error));
  EXPECT_FALSE(error.isEmpty());
}

TEST(RunControls, RunMenuAndSettingsPersist) {
  Fixture f;
  QStringList actions;
  for (QAction* menu : f.window->menuBar()->actions())
    if (menu->menu() && menu->text() == "&Run")
      for (QAction* a : menu->menu()->actions())
        actions << a->text();
  EXPECT_TRUE(actions.contains("&Run agent")) << actions.join(", ").toStdString();
  EXPECT_TRUE(actions.contains("Export design &report…"));
  EXPECT_TRUE(actions.contains("Se&ttings…"));
  EXPECT_GE(f.window->tabs()->indexOf(f.controls->sweepPanel()), 0);
  EXPECT_GE(f.window->tabs()->indexOf(f.controls->comparePanel()), 0);
  settings::setLauncherTemplate("srun --ntasks={world} {agent} {args}");
  settings::setHostfile("/shared/hosts");
  settings::setTheme("light");
  EXPECT_EQ(settings::launcherTemplate(), "srun --ntasks={world} {agent} {args}");
  EXPECT_EQ(settings::hostfile(), "/shared/hosts");
  EXPECT_EQ(settings::theme(), "light");
  EXPECT_EQ(settings::agentPath(), kAgent);
  // The launcher option is offered once a template is set.
  EXPECT_FALSE(f.panel()->useLauncher());
  f.panel()->refreshFromSettings();
  f.panel()->setUseLauncher(true);
  EXPECT_TRUE(f.panel()->useLauncher());
  settings::setTheme("system");
  settings::setLauncherTemplate({});
}

TEST(RunControls, CancelledSweepKeepsTheFinishedRuns) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(f.openEarlierRun());
  f.panel()->setParameters(smallRun(25));
  SweepPanel* sweep = f.controls->sweepPanel();
  sweep->setSizes({0, 1, 2, 4, 8, 16, 32, 64});
  sweep->start();
  ASSERT_TRUE(waitFor([&] { return !sweep->points().empty() || !sweep->busy(); }, 60000));
  sweep->cancel();
  ASSERT_TRUE(waitFor([&] { return !sweep->busy(); }, 30000));
  const std::size_t done = sweep->points().size();
  EXPECT_GE(done, 1u);
  EXPECT_LT(done, 8u);
  EXPECT_EQ(f.session()->runs().size(), 1 + done);
  EXPECT_EQ(f.session()->runs().front()->paths.front(), kResnet);
}

// Pictures for docs/UI.md: DDPSCOPE_SCREENSHOTS=DIR writes sweep.png and compare.png there
// (8 ranks of the default transformer, the default sweep). Without it the same pictures of a
// smaller run (2 ranks of a small MLP) go to a temporary folder, and must be whole PNGs.
TEST(RunControls, Screenshots) {
  QTemporaryDir scratch;
  QString dir = qEnvironmentVariable("DDPSCOPE_SCREENSHOTS");
  const bool for_docs = !dir.isEmpty();
  if (!for_docs) dir = scratch.path();
  Fixture f;
  RunParameters p;
  p.steps = 6;
  if (!for_docs) {
    p.world_size = 2;
    p.model = QStringLiteral("mlp");
    p.layers = 4;
    p.hidden = 256;
    p.steps = 3;
  }
  f.panel()->setParameters(p);
  SweepPanel* sweep = f.controls->sweepPanel();
  sweep->start();
  ASSERT_TRUE(waitFor([&] { return !sweep->busy(); }, 600000));
  ComparePanel* compare = f.controls->comparePanel();
  int per_tensor = -1, b25 = -1;
  for (int i = 0; i < static_cast<int>(f.session()->runs().size()); ++i) {
    const auto& r = f.session()->runs()[static_cast<std::size_t>(i)];
    if (r->name.startsWith("sweep b0 ")) per_tensor = i;
    if (r->name.startsWith("sweep b25 ")) b25 = i;
  }
  ASSERT_GE(per_tensor, 0);
  ASSERT_GE(b25, 0);
  compare->setRuns(per_tensor, b25);
  f.session()->setCurrent(b25);
  f.window->resize(1600, 1150);
  QApplication::processEvents();
  // Room for the tabs under the timeline.
  auto* split = qobject_cast<QSplitter*>(f.window->tabs()->parentWidget());
  ASSERT_TRUE(split);
  split->setSizes({330, 700});
  auto shoot = [&](QWidget* tab, const char* name) {
    f.window->tabs()->setCurrentWidget(tab);
    QApplication::processEvents();
    QString error;
    EXPECT_TRUE(exportWidget(f.window.get(), QDir(dir).filePath(name), 1.0, &error))
        << error.toStdString();
    EXPECT_EQ(QImage(QDir(dir).filePath(name)).size(), f.window->size()) << name;
  };
  shoot(sweep, "sweep.png");
  shoot(compare, "compare.png");
}
