// The sweep's summary, recommendation and run comparison, on hand-built reports and on real
// simulated runs of the agent.
#include "app/analysis/sweep.h"

#include "app/analysis/design_report.h"
#include "app/analysis/report_json.h"

#include <gtest/gtest.h>

#include "agent/run_agent.h"
#include "tracer/format/run_loader.h"

using namespace ddpscope;
using analysis::RunReport;

namespace {

RunReport reportWithSteps(
    std::vector<std::pair<analysis::TimeNs, analysis::TimeNs>> step_comm_hidden,
    analysis::TimeNs step_ns) {
  RunReport rep;
  analysis::RankReport r;
  std::int32_t n = 0;
  for (auto [comm, hidden] : step_comm_hidden) {
    analysis::StepReport s;
    s.step = n++;
    s.dur_ns = step_ns + (s.step == 0 ? 1'000'000 : 0);  // a slow first step
    s.metrics.comm_ns = comm;
    s.metrics.overlap_ns = hidden;
    s.metrics.exposed_ns = comm - hidden;
    s.allreduces = 4;
    r.steps.push_back(s);
  }
  rep.ranks.push_back(r);
  return rep;
}

analysis::SweepPoint point(double mb, analysis::TimeNs step_ns) {
  analysis::SweepPoint p;
  p.bucket_mb = mb;
  p.summary.step_ns = step_ns;
  return p;
}

// Two ranks, three steps of a small MLP on the simulated device.
agent::AgentOptions smallMlp() {
  agent::AgentOptions o;
  o.world_size = 2;
  o.steps = 3;
  o.model.kind = "mlp";
  o.model.layers = 4;
  o.model.hidden = 256;
  return o;
}
trace::Run simulatedRun(const agent::AgentOptions& o) {
  trace::Run run;
  run.ranks = agent::runSimulation(o).ranks;
  return run;
}
trace::Run smallSimulatedRun() {
  return simulatedRun(smallMlp());
}

}  // namespace

TEST(Sweep, SummaryDropsTheWarmUpStepAndWeighsOverlapByCommunication) {
  const auto s = analysis::summarizeRun(reportWithSteps({{100, 0}, {100, 50}, {300, 300}}, 10'000));
  EXPECT_EQ(s.steps_used, 2);
  EXPECT_EQ(s.step_ns, 10'000);
  ASSERT_TRUE(s.overlap_pct);
  EXPECT_DOUBLE_EQ(*s.overlap_pct, 100.0 * 350 / 400);
  EXPECT_EQ(s.exposed_ns_per_step, 25);
  EXPECT_DOUBLE_EQ(s.allreduces_per_step, 4);
}

TEST(Sweep, RecommendationNamesTheBestSizeAndItsGains) {
  std::vector<analysis::SweepPoint> pts = {point(100, 12'000'000), point(0, 20'000'000),
                                           point(25, 11'000'000), point(5, 10'000'000)};
  const auto rec = analysis::recommendBucketSize(pts, 100);
  EXPECT_EQ(pts[rec.best].bucket_mb, 5);  // sorted: 0, 5, 25, 100
  EXPECT_EQ(rec.best, 1u);
  EXPECT_FALSE(rec.best_at_edge);
  ASSERT_TRUE(rec.gain_vs_current_pct);
  EXPECT_NEAR(*rec.gain_vs_current_pct, 100.0 * 2 / 12, 1e-9);
  ASSERT_TRUE(rec.gain_vs_ddp_default_pct);
  EXPECT_NEAR(*rec.gain_vs_ddp_default_pct, 100.0 / 11, 1e-9);
  EXPECT_NE(rec.text.find("5 MiB"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("25 MiB"), std::string::npos) << rec.text;
  // When the current size is DDP's default, the saving is said once.
  const auto at_default = analysis::recommendBucketSize(pts, 25);
  EXPECT_EQ(at_default.text.find("Against PyTorch DDP"), std::string::npos) << at_default.text;
  EXPECT_NE(at_default.text.find("over the current 25 MiB"), std::string::npos) << at_default.text;
}

TEST(Sweep, BestAtTheEdgeIsSaid) {
  std::vector<analysis::SweepPoint> pts = {point(1, 3), point(2, 2), point(4, 1)};
  const auto rec = analysis::recommendBucketSize(pts, 1);
  EXPECT_TRUE(rec.best_at_edge);
  EXPECT_NE(rec.text.find("edge"), std::string::npos);
  std::vector<analysis::SweepPoint> none;
  EXPECT_THROW(analysis::recommendBucketSize(none, 1), std::invalid_argument);
}

TEST(Sweep, SimulatedTransformerSweepHasItsMinimumInside) {
  std::vector<analysis::SweepPoint> pts;
  for (double mb : {0.0, 25.0, 1000.0}) {
    agent::AgentOptions o;
    o.world_size = 8;
    o.bucket_mb = mb;
    o.first_bucket_mb = std::min(1.0, mb);
    o.steps = 4;
    auto sim = agent::runSimulation(o);
    trace::Run run;
    run.ranks = std::move(sim.ranks);
    analysis::SweepPoint p;
    p.bucket_mb = mb;
    p.summary = analysis::summarizeRun(analysis::analyzeRun(run));
    pts.push_back(p);
  }
  const auto rec = analysis::recommendBucketSize(pts, 1000);
  EXPECT_EQ(rec.best_mb, 25.0) << rec.text;
  EXPECT_GT(pts[0].summary.allreduces_per_step, pts[1].summary.allreduces_per_step);
  EXPECT_GT(pts[1].summary.allreduces_per_step, pts[2].summary.allreduces_per_step);
  EXPECT_GT(*rec.gain_vs_current_pct, 0.0);
}

TEST(Compare, RowsForTheDesignReviewTable) {
  const auto a = reportWithSteps({{100, 0}, {100, 0}, {100, 0}}, 20'000);
  const auto b = reportWithSteps({{100, 100}, {100, 100}, {100, 100}}, 15'000);
  const auto rows = analysis::compareRuns(a, b);
  ASSERT_GE(rows.size(), 6u);
  // The steps each side covers come first: the figures below are over those.
  EXPECT_EQ(rows[0].metric, "steps covered");
  EXPECT_EQ(rows[0].a, "steps 1–2; step 0 left out as warm-up");
  EXPECT_EQ(rows[1].metric, "step time");
  EXPECT_DOUBLE_EQ(rows[1].a_value, 20'000);
  EXPECT_DOUBLE_EQ(rows[1].b_value, 15'000);
  EXPECT_NE(rows[1].delta.find("-25.0 %"), std::string::npos) << rows[1].delta;
  EXPECT_EQ(rows[2].metric, "overlap");
  EXPECT_EQ(rows[2].a, "0.00 %");
  EXPECT_EQ(rows[2].b, "100.00 %");
  EXPECT_EQ(rows[2].delta, "+100.00 pp");  // percentage points
  // A count is whole when every step has the same; a fraction keeps its decimal.
  const auto count = std::find_if(rows.begin(), rows.end(),
                                  [](const auto& r) { return r.metric == "allreduces / step"; });
  ASSERT_NE(count, rows.end());
  EXPECT_EQ(count->a, "4");
  EXPECT_EQ(count->delta.substr(0, 1), "0");  // no change: no sign
  auto c = b;
  c.ranks[0].steps[1].allreduces = 5;
  const auto frac = analysis::compareRuns(a, c);
  for (const auto& r : frac) {
    if (r.metric == "allreduces / step") {
      EXPECT_EQ(r.b, "4.5");  // steps 1 and 2 (the first is a warm-up)
    }
  }
}

TEST(Compare, ARunWithoutStepsHasNoPerStepFigures) {
  // A: a rank with communication but no steps (summarised over its whole trace). Its step time,
  // exposed per step, allreduces per step and bucket wait are n/a, not 0, and so are the deltas.
  RunReport a;
  analysis::RankReport r;
  r.whole.comm_ns = 1'000;
  r.whole.exposed_ns = 1'000;
  r.whole.overlap_pct = 0.0;
  a.ranks.push_back(r);
  const auto b = reportWithSteps({{100, 0}, {100, 0}, {100, 0}}, 20'000);
  ASSERT_TRUE(analysis::summarizeRun(a).selection.whole_trace);
  const auto rows = analysis::compareRuns(a, b);
  for (const char* metric : {"step time", "exposed communication / step", "allreduces / step"}) {
    const auto row =
        std::find_if(rows.begin(), rows.end(), [&](const auto& x) { return x.metric == metric; });
    ASSERT_NE(row, rows.end()) << metric;
    EXPECT_EQ(row->a, "n/a") << metric;
    EXPECT_NE(row->b, "n/a") << metric;
    EXPECT_EQ(row->delta, "n/a") << metric;
  }
  // B has steps but no buckets: no bucket wait on either side (as summary --json's null).
  const auto wait = std::find_if(rows.begin(), rows.end(),
                                 [](const auto& x) { return x.metric == "mean bucket queued"; });
  ASSERT_NE(wait, rows.end());
  EXPECT_EQ(wait->a, "n/a");
  EXPECT_EQ(wait->b, "n/a");
}

TEST(DesignReport, MarkdownAndHtmlCarryTheNumbersAndLabelSimulatedRuns) {
  auto run = smallSimulatedRun();
  const auto report = analysis::analyzeRun(run);
  analysis::DesignReportInput in;
  in.run_name = "mlp <b25>";
  in.source = "sim";
  in.config = run.ranks[0].ddpscope.config;
  in.report = &report;
  in.timeline_png = "timeline.png";
  std::vector<analysis::SweepPoint> pts = {point(0, 2'000'000), point(25, 1'000'000)};
  in.recommendation = analysis::recommendBucketSize(pts, 0);
  in.sweep = pts;
  const auto md = analysis::designReportMarkdown(in);
  const auto html = analysis::designReportHtml(in);
  const auto summary = analysis::summarizeRun(report);
  char overlap[32];
  std::snprintf(overlap, sizeof overlap, "%.2f %%", *summary.overlap_pct);
  for (const auto* doc : {&md, &html}) {
    EXPECT_NE(doc->find("SIMULATED"), std::string::npos);
    EXPECT_NE(doc->find(overlap), std::string::npos) << overlap;
    EXPECT_NE(doc->find(analysis::formatDuration(summary.step_ns)), std::string::npos);
    EXPECT_NE(doc->find("timeline.png"), std::string::npos);
    EXPECT_NE(doc->find("Fastest bucket size: 25 MiB"), std::string::npos);
    EXPECT_NE(doc->find("bucket_mb"), std::string::npos);
  }
  EXPECT_NE(html.find("mlp &lt;b25&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(html.find("mlp <b25>"), std::string::npos);
  // Settings read as a person writes them: the float learning rate without its binary noise.
  in.config = {{"lr", "0.05000000074505806"}, {"model", "\"mlp\""}, {"steps", "3"}};
  const auto plain = analysis::designReportMarkdown(in);
  EXPECT_NE(plain.find("| lr | 0.05 |"), std::string::npos) << plain;
  EXPECT_NE(plain.find("| model | mlp |"), std::string::npos);
  EXPECT_NE(plain.find("| steps | 3 |"), std::string::npos);
  // As every message names them: a seed as written, no straggler as none.
  in.config = {{"seed", "1234567"}, {"sim_straggler_rank", "-1"}};
  const auto settings = analysis::designReportMarkdown(in);
  EXPECT_NE(settings.find("| seed | 1234567 |"), std::string::npos) << settings;
  EXPECT_NE(settings.find("| sim_straggler_rank | none |"), std::string::npos) << settings;
  EXPECT_EQ(md.find("INCOMPLETE"), std::string::npos);  // a complete run carries no warning
  // A run compared with its own digest names one configuration, "from its digest · " aside.
  in.compare_name_a = "run";
  in.compare_name_b = "run.digest.json";
  in.compare_configuration_a = "simulated · mlp · 2 ranks";
  in.compare_configuration_b = "from its digest · simulated · mlp · 2 ranks";
  in.compare_includes_this_run = true;
  in.comparison = {{"step time", "1 ms", "1 ms", "0 ns (0.0 %)", 1e6, 1e6}};
  EXPECT_EQ(analysis::designReportMarkdown(in).find("differ in more than one setting"),
            std::string::npos);
  in.compare_configuration_b = "from its digest · simulated · mlp · 4 ranks";
  EXPECT_NE(analysis::designReportMarkdown(in).find("differ in more than one setting"),
            std::string::npos);
}

TEST(DesignReport, AnIncompleteRunIsSaidSoBeforeAnyNumber) {
  auto run = smallSimulatedRun();
  run.ranks[1].ddpscope.incomplete = true;
  const auto report = analysis::analyzeRun(run);
  analysis::DesignReportInput in;
  in.run_name = "cut short";
  in.source = "sim";
  in.report = &report;
  in.incomplete_note = "The agent failed: exit status 1.";
  for (const auto& doc : {analysis::designReportMarkdown(in), analysis::designReportHtml(in)}) {
    const auto warning = doc.find("INCOMPLETE RUN");
    ASSERT_NE(warning, std::string::npos);
    EXPECT_LT(warning, doc.find("Headline"));
    EXPECT_NE(doc.find("flagged incomplete: rank 1."), std::string::npos);
    EXPECT_NE(doc.find("The agent failed: exit status 1."), std::string::npos);
    // Said once: the summary's own warning about the trace cut short is not repeated.
    EXPECT_EQ(doc.find("cut short ("), std::string::npos) << doc;
  }
  in.incomplete_note.clear();
  run.ranks[1].ddpscope.incomplete = false;
  const auto complete = analysis::analyzeRun(run);
  in.report = &complete;
  EXPECT_EQ(analysis::designReportMarkdown(in).find("INCOMPLETE"), std::string::npos);
}

// What the summary warns about is in the report too, before any number: here a rank missing.
TEST(DesignReport, TheSummarysWarningsComeBeforeAnyNumber) {
  auto run = smallSimulatedRun();
  ASSERT_GE(run.ranks.size(), 2u);
  run.ranks.pop_back();
  const auto report = analysis::analyzeRun(run);
  ASSERT_FALSE(report.warnings.empty());
  analysis::DesignReportInput in;
  in.report = &report;
  for (const auto& doc : {analysis::designReportMarkdown(in), analysis::designReportHtml(in)}) {
    const auto at = doc.find("Warning: " + report.warnings.front().substr(0, 20));
    ASSERT_NE(at, std::string::npos) << doc;
    EXPECT_LT(at, doc.find("Headline"));
  }
  // A rank's own warning, named by its rank: a trace with no events at all.
  trace::Run empty;
  empty.ranks.emplace_back();
  const auto nothing = analysis::analyzeRun(empty);
  in.report = &nothing;
  const auto md = analysis::designReportMarkdown(in);
  EXPECT_NE(md.find("> Warning: rank 0: this trace holds no events at all"), std::string::npos)
      << md;
}

// One bucket per step: its allreduce waits for the whole backward pass, no compute is left to
// hide it, and the summary says why; with several buckets it says nothing.
TEST(Sweep, OneBucketPerStepSaysWhyNothingOverlaps) {
  agent::AgentOptions o = smallMlp();
  o.bucket_mb = 10'000;
  o.first_bucket_mb = 10'000;
  const auto s = analysis::summarizeRun(analysis::analyzeRun(simulatedRun(o)));
  EXPECT_EQ(s.buckets_per_step, 1);
  ASSERT_TRUE(s.overlap_pct);
  EXPECT_LT(*s.overlap_pct, analysis::kLowOverlapPct);
  const std::string why = analysis::overlapReading(s);
  EXPECT_NE(why.find("one bucket per step, reduced after backward ends"), std::string::npos) << why;
  EXPECT_NE(analysis::runSummaryText(s).find("  " + why + "\n"), std::string::npos);
  // A small first bucket, as DDP's, and the rest in one: two buckets, the same reading.
  o.first_bucket_mb = 0.1;
  const auto t = analysis::summarizeRun(analysis::analyzeRun(simulatedRun(o)));
  EXPECT_EQ(t.buckets_per_step, 2);
  ASSERT_TRUE(t.overlap_pct);
  EXPECT_LT(*t.overlap_pct, analysis::kLowOverlapPct);
  EXPECT_NE(analysis::overlapReading(t).find("2 buckets per step, most gradients"),
            std::string::npos);
  o.bucket_mb = 0.1;
  const auto m = analysis::summarizeRun(analysis::analyzeRun(simulatedRun(o)));
  EXPECT_GT(m.buckets_per_step, 1);
  EXPECT_EQ(analysis::overlapReading(m), "");
  EXPECT_EQ(analysis::runSummaryText(m).find("bucket per step"), std::string::npos);
  EXPECT_EQ(m.overlap_setting, true);
  EXPECT_NE(analysis::runSummaryText(m).find("  recorded with buckets 0.1 MiB (first 0.1 MiB), "
                                             "overlapped with backward\n"),
            std::string::npos)
      << analysis::runSummaryText(m);
  // Recorded without overlap: the setting, and why, whatever the overlap and the bucket count.
  o.overlap = false;
  const auto n = analysis::summarizeRun(analysis::analyzeRun(simulatedRun(o)));
  EXPECT_EQ(n.overlap_setting, false);
  EXPECT_NE(analysis::overlapReading(n).find(": recorded without overlap (every allreduce launched "
                                             "after backward)"),
            std::string::npos)
      << analysis::overlapReading(n);
  EXPECT_NE(analysis::runSummaryText(n).find("0.1 MiB (first 0.1 MiB), not overlapped\n"),
            std::string::npos);
}

namespace {

analysis::MeasuredRun measured(double mb, std::vector<analysis::TimeNs> steps,
                               const std::string& label) {
  analysis::MeasuredRun m;
  m.bucket_mb = mb;
  m.label = label;
  m.configuration = "simulated · mlp";
  m.identity = {"sim", "mlp", 2};
  analysis::TimeNs sum = 0;
  for (const auto t : steps)
    sum += t;
  m.summary.steps_used = static_cast<std::int32_t>(steps.size());
  m.summary.step_ns = steps.empty() ? 0 : sum / static_cast<analysis::TimeNs>(steps.size());
  m.step_times = std::move(steps);
  return m;
}

}  // namespace

// Measured runs side by side: sorted by size, the fastest, the runs within twice the standard
// error of the difference of the means tied with it, worked out by hand.
TEST(MeasuredSweep, TheFastestAndTheRunsWithinItsNoise) {
  // Each run's steps are its mean ± 2: sd = √(16 / 3) = 2.31, SE² = 16 / 3 / 4 = 1.33, and two
  // runs are tied when their means are within 2·√(2 · 1.33) = 3.27 ns. 4 MiB is the fastest
  // (mean 100); 10 MiB (102) is tied with it, 1 MiB (104) is not.
  std::vector<analysis::MeasuredRun> runs{measured(10, {100, 104, 100, 104}, "b10"),
                                          measured(1, {102, 106, 102, 106}, "b1"),
                                          measured(4, {98, 102, 98, 102}, "b4")};
  std::string error;
  const auto s = analysis::measuredSweep(runs, -1, &error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->points.size(), 3u);
  EXPECT_EQ(s->points[0].label, "b1");
  EXPECT_EQ(s->points[2].label, "b10");
  EXPECT_EQ(s->best, 1u);
  EXPECT_EQ(s->tied, (std::vector<std::size_t>{2}));
  EXPECT_EQ(s->mark(1), "fastest, tied");
  EXPECT_EQ(s->mark(2), "tied");
  EXPECT_EQ(s->mark(0), "");
  EXPECT_EQ(s->spread[0], 2);
  EXPECT_TRUE(s->warning.empty());
  EXPECT_NE(s->text.find("within the noise of it"), std::string::npos) << s->text;
  EXPECT_NE(s->text.find(": 10 MiB; these runs"), std::string::npos) << s->text;
  EXPECT_EQ(s->recommendation.best_mb, 4);

  // A steady 10 MiB run at 103: 3 ns from the fastest, beyond 2·√1.33 = 2.31: nothing tied.
  runs[0] = measured(10, {103, 103, 103, 103}, "b10");
  const auto steady = analysis::measuredSweep(runs, -1, &error);
  ASSERT_TRUE(steady);
  EXPECT_TRUE(steady->tied.empty());
  EXPECT_EQ(steady->mark(1), "fastest");
}

TEST(MeasuredSweep, OtherSettingsAreWarnedAndBadSetsRefused) {
  auto a = measured(1, {100, 100}, "a");
  auto b = measured(4, {90, 90}, "b");
  a.settings = {{"sim_straggler_rank", "-1"}, {"sim_jitter", "0.10000000000000001"}};
  b.settings = {{"sim_straggler_rank", "1"}, {"sim_jitter", "0.2"}};
  b.summary.overlap_setting = false;
  a.summary.overlap_setting = true;
  std::string error;
  auto s = analysis::measuredSweep({a, b}, -1, &error);
  ASSERT_TRUE(s);
  EXPECT_EQ(
      s->warning,
      "Not like for like: overlap differs (a: on, b: off); sim_straggler_rank differs (a: "
      "none, b: 1); sim_jitter differs (a: 0.1, b: 0.2). Differences may come from these, not "
      "from the bucket size.");
  EXPECT_TRUE(s->note.empty());
  {
    // One difference is "this".
    auto c = b;
    c.settings = a.settings;
    c.summary.overlap_setting = true;
    c.settings.front().second = "1";
    const auto one = analysis::measuredSweep({a, c}, -1, &error);
    ASSERT_TRUE(one);
    EXPECT_EQ(one->warning,
              "Not like for like: sim_straggler_rank differs (a: none, b: 1). Differences may come "
              "from this, not from the bucket size.");
  }
  {
    // Compare of two runs with the same buckets: the warning does not say the buckets are what
    // differs.
    analysis::RunSummary x, y;
    x.bucket_setting = y.bucket_setting = "1 MiB (first 1 MiB)";
    EXPECT_EQ(analysis::comparedVaried(x, y), "");
    y.overlap_setting = false;  // recorded by one run only: not a difference
    EXPECT_EQ(analysis::comparedVaried(x, y), "");
    x.overlap_setting = true;  // on against off
    EXPECT_EQ(analysis::comparedVaried(x, y), "bucket configuration");
    x.overlap_setting.reset();
    y.overlap_setting.reset();
    y.bucket_setting = "10 MiB (first 1 MiB)";
    EXPECT_EQ(analysis::comparedVaried(x, y), "bucket configuration");
    x.bucket_setting = y.bucket_setting = "";  // not recorded: the buckets may differ
    EXPECT_EQ(analysis::comparedVaried(x, y), "bucket configuration");
    auto c = a;
    c.label = "b";
    c.settings.front().second = "1";
    EXPECT_EQ(analysis::likeForLikeWarning({a, c}, ""),
              "Not like for like: sim_straggler_rank differs (a: none, b: 1). Differences may come "
              "from this.");
  }
  {
    // Figures over steps against a whole trace's (no step markers): not the same quantity.
    auto c = a;
    c.label = "b";
    c.summary.selection.whole_trace = true;
    EXPECT_EQ(analysis::likeForLikeWarning({a, c}, ""),
              "Not like for like: figures over steps for a, over the whole trace (no step "
              "markers) for b. Differences may come from this.");
    // A rank's own warning, prefixed with its rank unless it names the rank first.
    EXPECT_EQ(analysis::rankWarning(3, "this trace holds no events at all"),
              "rank 3: this trace holds no events at all");
    EXPECT_EQ(analysis::rankWarning(0, "rank 0 is process 144"), "rank 0 is process 144");
    EXPECT_EQ(analysis::rankWarning(1, "rank 10 is process 144"), "rank 1: rank 10 is process 144");
    // The simulator's "no straggler" reads as none, in the warning and in a file clash alike.
    EXPECT_EQ(trace::settingText("sim_straggler_rank", "-1"), "none");
    EXPECT_EQ(trace::settingText("sim_straggler_rank", "3"), "3");
    EXPECT_EQ(trace::settingText("seed", "-1"), "-1");
    EXPECT_EQ(trace::settingText("model", "\"mlp\""), "mlp");
  }
  {
    // The heading's configuration: every run's (a digest's prefix aside), else none.
    auto c = measured(1, {100, 100}, "c"), d = measured(4, {90, 90}, "d");
    d.configuration = "from its digest · simulated · mlp";
    EXPECT_EQ(analysis::sharedConfiguration({c, d}), "simulated · mlp");
    d.configuration = "simulated · transformer";
    EXPECT_EQ(analysis::sharedConfiguration({c, d}), "");
  }
  {
    // Whole numbers as written, beyond a double's precision too (two seeds that differ read
    // differently); 32-bit floats written in full as the float's shortest form; a double as its
    // own.
    {
      auto e = measured(1, {100, 100}, "e"), f = measured(4, {90, 90}, "f");
      e.settings = {{"seed", "1733440000123456789"}, {"batch", "1125899906842624"}};
      f.settings = {{"seed", "1733440000123456790"}, {"batch", "1125899900000000"}};
      const auto seeds = analysis::measuredSweep({e, f}, -1, &error);
      ASSERT_TRUE(seeds);
      EXPECT_NE(seeds->warning.find("seed differs (e: 1733440000123456789, f: "
                                    "1733440000123456790); batch differs (e: 1125899906842624, f: "
                                    "1125899900000000)"),
                std::string::npos)
          << seeds->warning;
    }
    auto c = measured(1, {100, 100}, "c"), d = measured(4, {90, 90}, "d");
    c.settings = {{"lr", "0.05000000074505806"}, {"sim_jitter", "0.10000000000000001"}};
    d.settings = {{"lr", "0.10000000149011612"}, {"sim_jitter", "0.2"}};
    const auto floats = analysis::measuredSweep({c, d}, -1, &error);
    ASSERT_TRUE(floats);
    EXPECT_NE(floats->warning.find("lr differs (c: 0.05, d: 0.1); sim_jitter differs (c: 0.1, "
                                   "d: 0.2)"),
              std::string::npos)
        << floats->warning;
  }
  {
    // One run of a world of 4 missing rank 2, another missing ranks 1 to 3: other ranks.
    auto c = measured(1, {100, 100}, "c"), d = measured(4, {90, 90}, "d");
    for (auto* r : {&c, &d})
      r->summary.world_size = 4;
    c.summary.ranks = 4;
    const auto same = analysis::measuredSweep({c, d}, -1, &error);
    ASSERT_TRUE(same);
    EXPECT_TRUE(same->warning.empty()) << same->warning;
    d.summary.ranks = 3;
    d.summary.missing_ranks = {2};
    c.summary.ranks = 1;
    c.summary.missing_ranks = {1, 2, 3};
    const auto other = analysis::measuredSweep({c, d}, -1, &error);
    ASSERT_TRUE(other);
    EXPECT_EQ(other->warning,
              "Not like for like: ranks loaded differ (c: 1 of 4, missing ranks 1-3; d: 3 of 4, "
              "missing rank 2). Differences may come from this, not from the bucket size.");
    c.summary.ranks = 4;
    c.summary.missing_ranks.clear();
    EXPECT_NE(analysis::measuredSweep({c, d}, -1, &error)->warning.find("(c: all 4; d: 3 of 4"),
              std::string::npos);
  }
  // A digest of version 1 or 2 keeps no settings: not compared.
  b.settings_known = false;
  b.summary.overlap_setting = true;
  s = analysis::measuredSweep({a, b}, -1, &error);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->warning.empty()) << s->warning;
  EXPECT_EQ(s->note,
            "Settings not compared for b: a run digest of version 1 or 2 keeps no producer "
            "settings (a straggler, jitter, seed, ...), so a difference in them would not be "
            "warned of; compare the runs' traces, or digests made again by this ddpscope, to "
            "check them.");

  EXPECT_FALSE(analysis::measuredSweep({a, measured(1, {90}, "c")}, -1, &error));
  EXPECT_EQ(error, "two runs at 1 MiB: a and c; give one run per size");
  // One run given twice (its trace and its copy or digest) at two sizes.
  EXPECT_FALSE(analysis::measuredSweep({a, b, measured(8, {100, 100}, "a-copy")}, -1, &error));
  EXPECT_EQ(error,
            "a and a-copy have the same step times to the nanosecond: one run given at 1 and at "
            "8 MiB? give each size its own run");
  EXPECT_TRUE(analysis::measuredSweep({a, measured(8, {100, 101}, "e")}, -1, &error));
  // Simulated runs whose caps both exceed the model's gradients time alike, and say so.
  auto sim1 = measured(1, {100, 100}, "sim1"), sim8 = measured(8, {100, 100}, "sim8");
  sim1.recorded_bucket_mb = 1;
  sim8.recorded_bucket_mb = 8;
  EXPECT_TRUE(analysis::measuredSweep({sim1, sim8}, -1, &error)) << error;
  sim8.recorded_bucket_mb = 1;  // the same file given as 8 MiB
  EXPECT_FALSE(analysis::measuredSweep({sim1, sim8}, -1, &error));
  EXPECT_EQ(error,
            "sim1 and sim8 have the same step times to the nanosecond: one run given at 1 and at "
            "8 MiB? give each size its own run");
  sim8.recorded_bucket_mb.reset();  // one records its size, the other none: not told apart
  EXPECT_FALSE(analysis::measuredSweep({sim1, sim8}, -1, &error));
  EXPECT_FALSE(analysis::measuredSweep({a, measured(2, {}, "d")}, -1, &error));
  EXPECT_EQ(error,
            "d has no training steps (no ProfilerStep# ranges): a sweep compares step times; "
            "leave it out");
  EXPECT_FALSE(analysis::measuredSweep({}, -1, &error));
}

// A run without buckets (an export of send/recv, no step): the Buckets section says why, and
// there is no empty table and no appendix.
TEST(DesignReport, ARunWithoutBucketsSaysSoInsteadOfEmptyTables) {
  const auto report = analysis::analyzeRun(
      trace::loadRun({std::string(DDPSCOPE_TEST_DATA "/nsys/two_gpu_sendrecv.sqlite")}));
  analysis::DesignReportInput in;
  in.run_name = "sendrecv";
  in.source = "imported";
  in.report = &report;
  for (const auto& doc : {analysis::designReportMarkdown(in), analysis::designReportHtml(in)}) {
    EXPECT_NE(doc.find("No gradient bucket to show"), std::string::npos) << doc;
    EXPECT_NE(doc.find("No step drawn on its own: the trace has no training steps"),
              std::string::npos);
    EXPECT_EQ(doc.find("Appendix"), std::string::npos);
    EXPECT_EQ(doc.find("| bucket |"), std::string::npos);
  }
  // A run with buckets keeps its table and appendix.
  const auto sim = analysis::analyzeRun(smallSimulatedRun());
  in.report = &sim;
  const auto md = analysis::designReportMarkdown(in);
  EXPECT_EQ(md.find("No gradient bucket"), std::string::npos);
  EXPECT_EQ(md.find("No step drawn"), std::string::npos);
  EXPECT_NE(md.find("## Appendix: buckets step by step"), std::string::npos);
}
