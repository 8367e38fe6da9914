#pragma once
// What persists between sessions (QSettings): the agent's path, the multi-node launcher template,
// the trace folder, the last run's parameters, the theme and the user's classification rules. Also
// the agent's command line built from run parameters, and the launcher template filled in argument
// by argument.

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>

#include "app/analysis/rules.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::ui {

// The knobs of one agent run (the run panel's fields).
struct RunParameters {
  QString backend = QStringLiteral("sim");  // "sim" | "cuda"
  int world_size = 8;
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  bool overlap = true;
  QString fusion = QStringLiteral("view");        // "copy" | "view"
  QString model = QStringLiteral("transformer");  // "transformer" | "mlp"
  int layers = 12;
  int hidden = 768;
  int steps = 20;
  bool operator==(const RunParameters&) const = default;
};

// The preset sizes of a model (the agent's defaults): transformer 12 x 768, mlp 8 x 1024.
void applyModelPreset(RunParameters& p, const QString& model);

// The settings a run was made with, read from the ddpscope block the agent writes into each
// trace (backend, world size, bucket sizes, overlap, fusion, model and its sizes, steps); none
// for a trace the agent did not write, or one that lacks any of them.
std::optional<RunParameters> runParametersOf(const trace::RankTrace& rank);

// The agent's arguments for `p`, writing into out_dir (no program name, nothing quoted).
QStringList agentArguments(const RunParameters& p, const QString& out_dir);

// A short name for a run: "b25 ov view" / "b0 no-ov copy".
QString runLabel(const RunParameters& p);

// A program and its arguments, as QProcess takes them.
struct LaunchCommand {
  QString program;
  QStringList arguments;
};

// Shell-like display of a command (quotes only for the reader; never executed by a shell).
QString displayCommand(const LaunchCommand& command);

// Fills a launcher template such as `mpirun -np {world} --hostfile {hostfile} {agent} {args}`.
// The template is split into arguments first (QProcess::splitCommand); then `{args}` standing
// alone becomes the agent's arguments (several), and {world}, {hostfile}, {agent}, {out} are
// replaced inside each argument. An empty template runs the agent directly. Returns nullopt with a
// message when the template is empty of a program or lacks {agent}.
std::optional<LaunchCommand> expandLauncher(const QString& launcher_template, const QString& agent,
                                            const QStringList& agent_args, int world,
                                            const QString& hostfile, const QString& out_dir,
                                            QString* error);

// Stored with QSettings (organisation and application "ddpscope"), or in the INI file named by
// the DDPSCOPE_SETTINGS environment variable when set.
namespace settings {
// Where to look for the agent when none is set: beside the executable (installed), then the build
// tree (build/agent/ddpscope-agent relative to build/app/ui/ddpscope), then PATH.
QString defaultAgentPath();
QString agentPath();  // the setting, or defaultAgentPath()
void setAgentPath(const QString& path);
QString launcherTemplate();  // "" = run the agent directly
void setLauncherTemplate(const QString& t);
QString hostfile();
void setHostfile(const QString& path);
// The folder new runs are written under (for multi-node runs: a path every node shares).
QString tracesFolder();
void setTracesFolder(const QString& path);
RunParameters lastRunParameters();
void setLastRunParameters(const RunParameters& p);
QString theme();  // "system" | "light"
void setTheme(const QString& theme);
// Opening a run above either size offers to open its digest instead (docs/DIGEST.md): more
// trace files than digestOfferRanks(), or more than digestOfferGB() GB of them; 0: never.
int digestOfferRanks();  // default 64
void setDigestOfferRanks(int ranks);
double digestOfferGB();  // default 8
void setDigestOfferGB(double gb);
// The main window's timeline / tabs divider as the user last left it (QSplitter::saveState);
// empty when the user has not placed it.
QByteArray centreSplitterState();
void setCentreSplitterState(const QByteArray& state);
// The user's classification rules as the settings' rules editor holds them: JSON Lines, the
// format of a rules file (docs/RULES.md); "" when none.
QString userRules();
void setUserRules(const QString& text);
// The rules the app classifies with: the settings' user rules before the built-in ones when
// there are any, else those of every command (DDPSCOPE_RULES when set, else the built-in ones).
// Throws analysis::RulesError naming the line when the stored rules are bad.
std::shared_ptr<const analysis::ClassRules> classRules();
}  // namespace settings

// Rules text checked by the analysis library's parser: the rules (the user's before the built-in
// ones), or null with the parser's message in *error ("rules in the settings:3: ...", naming the
// line). Empty text (or only comments and blank lines) gives the rules of classRules() without
// user rules.
std::shared_ptr<const analysis::ClassRules> parseUserRules(const QString& text, QString* error);

}  // namespace ddpscope::ui
