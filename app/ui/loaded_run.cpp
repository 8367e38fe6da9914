#include "app/ui/loaded_run.h"

#include <QFileInfo>
#include <utility>

#include "app/ui/app_settings.h"
#include "app/ui/run_text.h"

namespace ddpscope::ui {

std::shared_ptr<LoadedRun> prepareRun(trace::Run run, const QStringList& paths,
                                      std::shared_ptr<const analysis::ClassRules> rules) {
  auto out = std::make_shared<LoadedRun>();
  out->paths = paths;
  out->name = QString::fromStdString(run.name);
  if (out->name.isEmpty() && !paths.isEmpty()) out->name = QFileInfo(paths.front()).fileName();
  // The app's rules: the settings' user rules, else DDPSCOPE_RULES when set (a bad file fails
  // the load, naming its line), else the built-in ones.
  analysis::AnalysisOptions options;
  options.rules = rules ? std::move(rules) : settings::classRules();
  out->rules = options.rules;
  std::vector<analysis::RankActivity> activity;  // from the analysis's own pass
  out->report = analysis::analyzeRun(run, options, &activity);
  out->timeline = buildTimelineModel(run, out->report, activity);
  for (const auto& a : activity)
    out->overlap.push_back(rankOverlap(a));
  out->summary = analysis::summarizeRun(out->report);
  out->completeness = {out->report.completeness, QString()};
  out->run = std::move(run);
  return out;
}

std::shared_ptr<LoadedRun> reanalyseRun(const LoadedRun& run,
                                        std::shared_ptr<const analysis::ClassRules> rules) {
  auto out = prepareRun(run.run, run.paths, std::move(rules));
  out->name = run.name;
  out->load_seconds = run.load_seconds;
  out->completeness.producer_error = run.completeness.producer_error;
  return out;
}

QString LoadedRun::incompleteText() const {
  return incompleteExplanation(completeness, run.ranks.size());
}

RankOverlap rankOverlap(const analysis::RankActivity& activity) {
  return {activity.comm, analysis::intersect(activity.comm, activity.compute)};
}

std::optional<double> RankOverlap::pctWithin(trace::TimeNs lo, trace::TimeNs hi) const {
  // |comm ∩ [lo, hi)| and |comm ∩ compute ∩ [lo, hi)|, the two lengths overlapPctWithin
  // divides, in the same arithmetic.
  const trace::TimeNs c = analysis::lengthWithin(comm, lo, hi);
  if (c == 0) return std::nullopt;
  return 100.0 * static_cast<double>(analysis::lengthWithin(hidden, lo, hi)) /
         static_cast<double>(c);
}

trace::TimeNs RankOverlap::computeWithinComm(trace::TimeNs lo, trace::TimeNs hi) const {
  // [lo, hi) ⊆ ∪comm, so compute ∩ [lo, hi) = (comm ∩ compute) ∩ [lo, hi).
  return analysis::lengthWithin(hidden, lo, hi);
}

trace::TimeNs RankOverlap::commWithin(trace::TimeNs lo, trace::TimeNs hi) const {
  return analysis::lengthWithin(comm, lo, hi);
}

}  // namespace ddpscope::ui
