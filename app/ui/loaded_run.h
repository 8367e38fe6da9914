#pragma once
// A run loaded into the app and everything derived from it once, off the GUI thread: the
// analysis's report and summary, each rank's overlap sets, the timeline model and whether the
// numbers cover the whole run. Immutable once loaded; the views share it.

#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/run_summary.h"
#include "app/ui/timeline_model.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::ui {

// Whether a run's numbers cover the whole run: the analysis's completeness (traces cut short,
// ranks of the declared world with no trace: analysis::Completeness) and, for a run the app
// made, whether the agent that made it failed.
struct Completeness : analysis::Completeness {
  QString producer_error;  // the failed agent's message, "" when none
  bool incomplete() const {
    return analysis::Completeness::incomplete() || !producer_error.isEmpty();
  }
};

// What the views measure a rank's overlap against once its timeline is built: its communication
// and the part of it hidden under compute (∪comm ∩ ∪compute). Both have about as many intervals
// as the rank has communication kernels; the compute union (one interval per gap between
// kernels, 8 B per trace event) and the other sets of analysis::RankActivity are not kept.
struct RankOverlap {
  analysis::IntervalSet comm;
  analysis::IntervalSet hidden;

  // Overlap % inside [lo, hi); empty when no comm there. Equals analysis::overlapPctWithin of
  // the rank's activity: the comm inside [lo, hi) hidden under compute is `hidden` there.
  std::optional<double> pctWithin(trace::TimeNs lo, trace::TimeNs hi) const;
  // How much of [lo, hi) is under the rank's compute, for a span inside its communication (a
  // comm kernel): analysis::lengthWithin(activity.compute, lo, hi), exactly.
  trace::TimeNs computeWithinComm(trace::TimeNs lo, trace::TimeNs hi) const;
  // How much of [lo, hi) is under the rank's communication: analysis::lengthWithin of its comm.
  trace::TimeNs commWithin(trace::TimeNs lo, trace::TimeNs hi) const;
};
RankOverlap rankOverlap(const analysis::RankActivity& activity);

// A run with everything derived from it; immutable once loaded, shared between views.
struct LoadedRun {
  QString name;
  QStringList paths;
  trace::Run run;
  analysis::RunReport report;
  analysis::RunSummary summary;  // every run-level figure shown (analysis::summarizeRun)
  // The classification rules the analysis used (the settings' rules, DDPSCOPE_RULES or the
  // built-in ones): the views classify single events with these, never with others.
  std::shared_ptr<const analysis::ClassRules> rules;
  std::vector<RankOverlap> overlap;  // one per rank
  TimelineModel timeline;
  double load_seconds = 0;
  Completeness completeness;

  std::string_view source() const { return run.source(); }
  bool incomplete() const { return completeness.incomplete(); }
  // What the INCOMPLETE badge's tooltip says (run_text.h incompleteExplanation).
  QString incompleteText() const;
};

// Builds a LoadedRun from a run in memory (analysis + timeline model). Runs on any thread.
// rules: null for the app's (settings::classRules: the settings' rules editor, DDPSCOPE_RULES or
// the built-in ones); a bad rule throws analysis::RulesError naming its line.
std::shared_ptr<LoadedRun> prepareRun(trace::Run run, const QStringList& paths,
                                      std::shared_ptr<const analysis::ClassRules> rules = nullptr);
// The same run analysed again with other rules: a new LoadedRun with the same name, paths, load
// time and producer error. Runs on any thread.
std::shared_ptr<LoadedRun> reanalyseRun(const LoadedRun& run,
                                        std::shared_ptr<const analysis::ClassRules> rules);

}  // namespace ddpscope::ui
