// One run, one set of figures: the app's headline, an exported figure's title, the CLI's `run`
// object and the design report written by `ddpscope --report` state the same numbers, over the
// same steps, for the reference trace and for a simulated run; a folder mixing two runs is
// refused by the CLI, the app and the report alike. The reference trace's figures are also
// checked against its independently computed per-step figures.
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <cstdio>

#include <gtest/gtest.h>

#include "app/analysis/run_summary.h"
#include "app/ui/headline_bar.h"
#include "app/ui/main_window.h"
#include "app/ui/run_load_job.h"
#include "app/ui/run_text.h"
#include "app/ui/session.h"
#include "tests/ui/ui_test_app.h"

using namespace ddpscope;
using namespace ddpscope::ui;

namespace {

struct ProcessResult {
  int exit_code = -1;
  QByteArray out, err;
};

ProcessResult runProcess(const QString& program, const QStringList& args) {
  QProcess p;
  auto env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
  p.setProcessEnvironment(env);
  p.start(program, args);
  EXPECT_TRUE(p.waitForFinished(240'000)) << program.toStdString();
  ProcessResult r;
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

QString pct(double v, int decimals) {
  return QString::number(v, 'f', decimals) + QStringLiteral(" %");
}

// Everything a user reads about one run, gathered from each outlet.
struct Outlets {
  QString headline_overlap, headline_dp, headline_idle, headline_scope;
  QString title;
  QJsonObject cli_run;
  QString report_md;
};

Outlets gather(const QStringList& paths, const QString& report_dir) {
  Outlets o;
  ui::testing::app();
  MainWindow window;
  window.setErrorDialogsEnabled(false);
  RunLoadResult loaded = loadRunBlocking(paths);
  EXPECT_TRUE(loaded.run) << loaded.error.toStdString();
  if (!loaded.run) return o;
  window.session()->addRun(loaded.run);
  o.headline_overlap = window.headline()->overlapText();
  o.headline_dp = window.headline()->dpEfficiencyText();
  o.headline_idle = window.headline()->gpuIdleText();
  o.headline_scope = window.headline()->scopeText();
  o.title = runTitle(*loaded.run);

  const auto cli =
      runProcess(QStringLiteral(DDPSCOPE_CLI), QStringList{"summary", "--json"} + paths);
  EXPECT_EQ(cli.exit_code, 0) << cli.err.toStdString();
  QJsonParseError error;
  const auto doc = QJsonDocument::fromJson(cli.out, &error);
  EXPECT_EQ(error.error, QJsonParseError::NoError) << error.errorString().toStdString();
  o.cli_run = doc.object().value(QStringLiteral("run")).toObject();

  const auto report =
      runProcess(QStringLiteral(DDPSCOPE_APP), QStringList{"--report", report_dir} + paths);
  EXPECT_EQ(report.exit_code, 0) << report.err.toStdString();
  QFile md(QDir(report_dir).filePath(QStringLiteral("report.md")));
  EXPECT_TRUE(md.open(QIODevice::ReadOnly)) << md.fileName().toStdString();
  o.report_md = QString::fromUtf8(md.readAll());
  EXPECT_TRUE(QFile::exists(QDir(report_dir).filePath(QStringLiteral("report.html"))));
  QFile png(QDir(report_dir).filePath(QStringLiteral("timeline.png")));
  EXPECT_TRUE(png.open(QIODevice::ReadOnly));
  EXPECT_TRUE(png.read(8).startsWith("\x89PNG\r\n\x1a\n"));
  return o;
}

// The outlets agree with each other and with the CLI's raw numbers.
void expectConsistent(const Outlets& o) {
  const auto& run = o.cli_run;
  ASSERT_FALSE(run.isEmpty());
  // The CLI's numbers, formatted as the figures print them.
  const QString overlap = run.value("overlap_pct").isNull()
                              ? QStringLiteral("n/a")
                              : pct(run.value("overlap_pct").toDouble(), 2);
  const QString dp = run.value("dp_efficiency").isNull()
                         ? QStringLiteral("n/a")
                         : pct(run.value("dp_efficiency").toDouble() * 100, 1);
  const QString idle = run.value("gpu_idle_pct").isNull()
                           ? QStringLiteral("n/a")
                           : pct(run.value("gpu_idle_pct").toDouble(), 1);
  const QString scope = run.value("step_rule").toString();
  EXPECT_EQ(o.headline_overlap, overlap);
  EXPECT_EQ(o.headline_dp, dp);
  EXPECT_EQ(o.headline_idle, idle);
  EXPECT_EQ(o.headline_scope, scope);
  for (const QString& part : {QStringLiteral("overlap ") + overlap, QStringLiteral("DP eff. ") + dp,
                              QStringLiteral("GPU idle ") + idle, scope}) {
    EXPECT_TRUE(o.title.contains(part)) << o.title.toStdString() << " lacks " << part.toStdString();
  }
  for (const QString& row : {QStringLiteral("| communication hidden (overlap) | ") + overlap + " |",
                             QStringLiteral("| DP efficiency | ") + dp + " |",
                             QStringLiteral("| GPU idle | ") + idle + " |",
                             QStringLiteral("| steps covered | ") + scope + " |"}) {
    EXPECT_TRUE(o.report_md.contains(row)) << "report.md lacks " << row.toStdString() << "\n"
                                           << o.report_md.toStdString();
  }
}

}  // namespace

TEST(OneTruth, ReferenceTraceStatesTheSameFiguresEverywhere) {
  QTemporaryDir dir;
  const QString trace = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");
  const Outlets o = gather({trace}, dir.filePath(QStringLiteral("report")));
  expectConsistent(o);
  // Against the reference's independent per-step figures (steps 5 and 6; 4 is warm-up):
  // hidden 1760.420 + 3731.346 µs of 12300.029 + 22587.443 µs of communication; step times
  // 219726.905 and 224936.243 µs; exposed 10539.609 and 18856.097 µs.
  const auto& run = o.cli_run;
  EXPECT_EQ(run.value("steps_used").toArray(), (QJsonArray{5, 6}));
  EXPECT_EQ(run.value("step_rule").toString().toStdString(),
            "steps 5–6; step 4 left out as warm-up");
  EXPECT_EQ(o.headline_overlap, pct(100.0 * 5'491'766 / 34'887'472, 2));  // "15.74 %"
  EXPECT_NEAR(run.value("step_us").toDouble(), (219726.905 + 224936.243) / 2, 0.001);
  EXPECT_NEAR(run.value("exposed_comm_per_step_us").toDouble(), (10539.609 + 18856.097) / 2, 0.001);
  EXPECT_NEAR(run.value("dp_efficiency").toDouble(),
              1.0 - (10539.609 + 18856.097) / (219726.905 + 224936.243), 1e-6);
  EXPECT_EQ(o.headline_dp, QStringLiteral("93.4 %"));
  // The median of the two steps covered is drawn on its own: step 5 (219.7 ms, the faster);
  // step 6 is 2.4 % slower, under the 5 % that would draw it too.
  const QDir report_dir(dir.filePath(QStringLiteral("report")));
  EXPECT_TRUE(o.report_md.contains(
      QStringLiteral("![Step 5, the faster of the 2 steps covered (220 ms)](step-5.png)")))
      << o.report_md.toStdString();
  EXPECT_FALSE(o.report_md.contains(QStringLiteral("step-6.png")));
  const QImage whole(report_dir.filePath(QStringLiteral("timeline.png")));
  const QImage step5(report_dir.filePath(QStringLiteral("step-5.png")));
  EXPECT_GT(step5.width(), 800);
  // Another window of the same lanes: the step's own window figures in the title make it
  // taller, and it is not the whole run's image.
  EXPECT_GT(step5.height(), whole.height());
  // The report lists its figures in its manifest.
  QFile manifest(report_dir.filePath(QStringLiteral(".ddpscope-report")));
  ASSERT_TRUE(manifest.open(QIODevice::ReadOnly));
  EXPECT_EQ(QString::fromUtf8(manifest.readAll()).split('\n', Qt::SkipEmptyParts),
            (QStringList{"timeline.png", "step-5.png", "predicted.png"}));
  manifest.close();
  // The reference trace's report written again into the same folder.
  const auto reportAgain = [&] {
    const auto r = runProcess(QStringLiteral(DDPSCOPE_APP), {"--report", report_dir.path(), trace});
    EXPECT_EQ(r.exit_code, 0) << r.err.toStdString();
  };
  // Written again into that folder: the figures an earlier report listed and this one does not
  // write (another run's step, a comparison) are removed; other files, of a figure's name too,
  // are the user's and stay.
  for (const char* name : {"step-99.png", "compare.png", "step-98.png", "notes.png"}) {
    QFile f(report_dir.filePath(QString::fromUtf8(name)));
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("old");
  }
  ASSERT_TRUE(manifest.open(QIODevice::WriteOnly));
  // A name outside the folder is never a report's figure: the file beside the folder stays.
  QFile outside(dir.filePath(QStringLiteral("step-1.png")));
  ASSERT_TRUE(outside.open(QIODevice::WriteOnly));
  outside.close();
  manifest.write("timeline.png\r\nstep-99.png\ncompare.png\nreport.md\n../step-1.png\n");
  manifest.close();
  reportAgain();
  EXPECT_FALSE(report_dir.exists(QStringLiteral("step-99.png")));
  EXPECT_FALSE(report_dir.exists(QStringLiteral("compare.png")));
  EXPECT_TRUE(report_dir.exists(QStringLiteral("step-98.png")));
  EXPECT_TRUE(report_dir.exists(QStringLiteral("notes.png")));
  EXPECT_TRUE(report_dir.exists(QStringLiteral("report.md")));  // listed, but not a figure
  EXPECT_TRUE(QFile::exists(dir.filePath(QStringLiteral("step-1.png"))));
  // A report without its manifest (copied without the dot file, or older): the figures its
  // report.md shows are the ones removed.
  ASSERT_TRUE(QFile::remove(manifest.fileName()));
  {
    QFile old_md(report_dir.filePath(QStringLiteral("report.md")));
    ASSERT_TRUE(old_md.open(QIODevice::WriteOnly));
    old_md.write("# old\n\n![Step 77, the median (1 ms)](step-77.png)\n");
    QFile fig(report_dir.filePath(QStringLiteral("step-77.png")));
    ASSERT_TRUE(fig.open(QIODevice::WriteOnly));
    fig.write("old");
  }
  reportAgain();
  EXPECT_FALSE(report_dir.exists(QStringLiteral("step-77.png")));
  EXPECT_TRUE(report_dir.exists(QStringLiteral("step-98.png")));
  EXPECT_TRUE(report_dir.exists(QStringLiteral(".ddpscope-report")));
  EXPECT_TRUE(report_dir.exists(QStringLiteral("step-5.png")));
  // One rank of a two-rank job: said as such everywhere.
  EXPECT_EQ(run.value("ranks").toInt(), 1);
  EXPECT_EQ(run.value("world_size").toInt(), 2);
  EXPECT_TRUE(o.title.contains(QStringLiteral("1 of 2 ranks"))) << o.title.toStdString();
  EXPECT_TRUE(o.report_md.contains(QStringLiteral("| ranks | 1 of 2 ranks |")));
  // Its buckets are inferred from the allreduce kernels: no tensor count to show, no column.
  EXPECT_TRUE(o.report_md.contains(QStringLiteral("| step | bucket | MiB | ready")))
      << o.report_md.toStdString();
}

TEST(OneTruth, SimulatedRunStatesTheSameFiguresEverywhere) {
  QTemporaryDir dir;
  const QString out = dir.filePath(QStringLiteral("sim"));
  const auto agent =
      runProcess(QStringLiteral(DDPSCOPE_AGENT),
                 {"--backend", "sim", "--world-size", "4", "--bucket-mb", "5", "--steps", "5",
                  "--model", "mlp", "--layers", "6", "--hidden", "512", "--out", out});
  ASSERT_EQ(agent.exit_code, 0) << agent.err.toStdString();
  const Outlets o = gather({out}, dir.filePath(QStringLiteral("report")));
  expectConsistent(o);
  EXPECT_EQ(o.cli_run.value("ranks").toInt(), 4);
  EXPECT_EQ(o.cli_run.value("steps_used").toArray().size(), 4);  // 5 steps, the first left out
  EXPECT_TRUE(o.report_md.contains(QStringLiteral("Configuration: simulated · mlp, 6 layers")))
      << o.report_md.toStdString();
  EXPECT_TRUE(o.report_md.contains(QStringLiteral("buckets 5 MiB")));
  // Ours carry the bucket list: the tensors of each bucket are shown.
  EXPECT_TRUE(o.report_md.contains(QStringLiteral("| step | bucket | tensors | MiB | ready")))
      << o.report_md.toStdString();
}

TEST(OneTruth, AFolderMixingTwoRunsIsRefusedEverywhere) {
  QTemporaryDir dir;
  const QString a = dir.filePath(QStringLiteral("a")), b = dir.filePath(QStringLiteral("b"));
  for (const auto& [folder, mb] : {std::pair{a, "5"}, std::pair{b, "100"}}) {
    const auto agent = runProcess(QStringLiteral(DDPSCOPE_AGENT),
                                  {"--backend", "sim", "--world-size", "2", "--bucket-mb", mb,
                                   "--steps", "3", "--model", "mlp", "--out", folder});
    ASSERT_EQ(agent.exit_code, 0) << agent.err.toStdString();
  }
  // Rank 0 of the 5 MiB run with rank 1 of the 100 MiB run, same world size.
  const QString mixed = dir.filePath(QStringLiteral("mixed"));
  ASSERT_TRUE(QDir().mkpath(mixed));
  ASSERT_TRUE(QFile::copy(a + "/rank-0.json.gz", mixed + "/rank-0.json.gz"));
  ASSERT_TRUE(QFile::copy(b + "/rank-1.json.gz", mixed + "/rank-1.json.gz"));

  const auto cli = runProcess(QStringLiteral(DDPSCOPE_CLI), {"summary", "--json", mixed});
  EXPECT_EQ(cli.exit_code, 1);
  EXPECT_TRUE(cli.out.isEmpty());
  EXPECT_TRUE(cli.err.contains("its bucket_mb is 100, not 5")) << cli.err.toStdString();

  ui::testing::app();
  const RunLoadResult loaded = loadRunBlocking({mixed});
  EXPECT_FALSE(loaded.run);
  EXPECT_TRUE(loaded.error.contains(QStringLiteral("its bucket_mb is 100, not 5")))
      << loaded.error.toStdString();

  const QString report_dir = dir.filePath(QStringLiteral("report"));
  const auto report = runProcess(QStringLiteral(DDPSCOPE_APP), {"--report", report_dir, mixed});
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_TRUE(report.err.contains("not from one run")) << report.err.toStdString();
  EXPECT_FALSE(QFile::exists(report_dir + "/report.md"));
}

// A rules file given by DDPSCOPE_RULES classifies for the app, its report and the CLI alike:
// with NCCL kernels made computation, every outlet says there is no communication.
TEST(OneTruth, RulesFromTheEnvironmentApplyToEveryOutlet) {
  QTemporaryDir dir;
  qputenv("DDPSCOPE_RULES", DDPSCOPE_TEST_DATA "/rules/nccl_is_compute.jsonl");
  const Outlets o = gather({QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz")},
                           dir.filePath(QStringLiteral("report")));
  qunsetenv("DDPSCOPE_RULES");
  expectConsistent(o);
  EXPECT_EQ(o.headline_overlap, QStringLiteral("n/a"));
  EXPECT_TRUE(o.cli_run.value("overlap_pct").isNull());
  // An imported trace has no bucket list: the report does not claim a dependency check.
  EXPECT_TRUE(o.report_md.contains(QStringLiteral("not checked (the trace has no bucket list)")));
  // And the report and the CLI say which rules classified it.
  EXPECT_TRUE(
      o.report_md.contains(QStringLiteral("nccl_is_compute.jsonl (1 rule), then built-in")));
}

TEST(OneTruth, ABadRulesFileFailsTheLoadNamingItsLine) {
  qputenv("DDPSCOPE_RULES", DDPSCOPE_TEST_DATA "/rules/bad_regex.jsonl");
  ui::testing::app();
  const RunLoadResult loaded =
      loadRunBlocking({QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz")});
  qunsetenv("DDPSCOPE_RULES");
  EXPECT_FALSE(loaded.run);
  EXPECT_TRUE(loaded.error.contains(QStringLiteral("bad_regex.jsonl:2")))
      << loaded.error.toStdString();
}

// A run of more ranks than a figure draws (eight): the report's timeline figures pin the late
// rank above them when it is not among them, and the report says which lanes it draws.
TEST(OneTruth, TheReportDrawsTheLateRankOfAManyRankRun) {
  QTemporaryDir dir;
  const QString out = dir.filePath(QStringLiteral("late9"));
  const auto agent = runProcess(QStringLiteral(DDPSCOPE_AGENT), {"--backend",
                                                                 "sim",
                                                                 "--world-size",
                                                                 "10",
                                                                 "--bucket-mb",
                                                                 "5",
                                                                 "--steps",
                                                                 "4",
                                                                 "--model",
                                                                 "mlp",
                                                                 "--layers",
                                                                 "4",
                                                                 "--hidden",
                                                                 "512",
                                                                 "--straggler-rank",
                                                                 "9",
                                                                 "--straggler-slowdown",
                                                                 "1.5",
                                                                 "--out",
                                                                 out});
  ASSERT_EQ(agent.exit_code, 0) << agent.err.toStdString();
  const QString report_dir = dir.filePath(QStringLiteral("report"));
  const auto report = runProcess(QStringLiteral(DDPSCOPE_APP), {"--report", report_dir, out});
  ASSERT_EQ(report.exit_code, 0) << report.err.toStdString();
  QFile md(QDir(report_dir).filePath(QStringLiteral("report.md")));
  ASSERT_TRUE(md.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(md.readAll());
  EXPECT_TRUE(text.contains(QStringLiteral("| late rank | rank 9 "))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral(
      ": the lanes of ranks 0–7 and of rank 9, the late rank, pinned above them (of 10 ranks) "
      "from the step's earliest start to its latest end on any rank")))
      << text.toStdString();
}
