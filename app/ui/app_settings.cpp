#include "app/ui/app_settings.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QSettings>
#include <QStandardPaths>
#include <algorithm>
#include <cmath>
#include <limits>

namespace ddpscope::ui {

void applyModelPreset(RunParameters& p, const QString& model) {
  p.model = model;
  if (model == QLatin1String("mlp")) {
    p.layers = 8;
    p.hidden = 1024;
  } else {
    p.layers = 12;
    p.hidden = 768;
  }
}

std::optional<RunParameters> runParametersOf(const trace::RankTrace& rank) {
  const auto& block = rank.ddpscope;
  if (!block.present || block.config.empty()) return std::nullopt;
  bool ok = true;
  const auto raw = [&](const char* key) {
    const auto v = block.configValue(key);
    if (v.empty()) ok = false;
    return QString::fromUtf8(v.data(), static_cast<qsizetype>(v.size()));
  };
  const auto text = [&](const char* key) {
    QString v = raw(key);
    if (v.size() >= 2 && v.startsWith(QLatin1Char('"')) && v.endsWith(QLatin1Char('"')))
      return v.mid(1, v.size() - 2);
    ok = false;
    return QString();
  };
  const auto number = [&](const char* key) {
    bool is = false;
    const double v = raw(key).toDouble(&is);
    ok = ok && is && std::isfinite(v);
    return ok ? v : 0.0;
  };
  const auto whole = [&](const char* key) {
    const double v = number(key);
    ok = ok && v == std::trunc(v) && v >= std::numeric_limits<int>::min() &&
         v <= std::numeric_limits<int>::max();
    return ok ? static_cast<int>(v) : 0;
  };
  const auto flag = [&](const char* key) {
    const QString v = raw(key);
    ok = ok && (v == QLatin1String("true") || v == QLatin1String("false"));
    return v == QLatin1String("true");
  };
  RunParameters p;
  p.backend = text("backend");
  p.world_size = whole("world_size");
  p.bucket_mb = number("bucket_mb");
  p.first_bucket_mb = number("first_bucket_mb");
  p.overlap = flag("overlap");
  p.fusion = text("fusion");
  p.model = text("model");
  p.layers = whole("layers");
  p.hidden = whole("hidden");
  p.steps = whole("steps");
  if (!ok) return std::nullopt;
  return p;
}

QStringList agentArguments(const RunParameters& p, const QString& out_dir) {
  QStringList a{QStringLiteral("--backend"),         p.backend,
                QStringLiteral("--world-size"),      QString::number(p.world_size),
                QStringLiteral("--bucket-mb"),       QString::number(p.bucket_mb, 'g', 10),
                QStringLiteral("--first-bucket-mb"), QString::number(p.first_bucket_mb, 'g', 10),
                QStringLiteral("--fusion"),          p.fusion,
                QStringLiteral("--model"),           p.model,
                QStringLiteral("--layers"),          QString::number(p.layers),
                QStringLiteral("--hidden"),          QString::number(p.hidden),
                QStringLiteral("--steps"),           QString::number(p.steps)};
  if (!p.overlap) a << QStringLiteral("--no-overlap");
  a << QStringLiteral("--out") << out_dir;
  return a;
}

QString runLabel(const RunParameters& p) {
  return QStringLiteral("b%1 %2 %3")
      .arg(QString::number(p.bucket_mb, 'g', 6), p.overlap ? QStringLiteral("ov") : "no-ov",
           p.fusion);
}

QString displayCommand(const LaunchCommand& command) {
  static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_./:=,+@%-]+$"));
  QStringList parts;
  for (const QString& a : QStringList{command.program} + command.arguments) {
    if (plain.match(a).hasMatch()) {
      parts << a;
    } else {
      QString q = a;
      q.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
      parts << QLatin1Char('\'') + q + QLatin1Char('\'');
    }
  }
  return parts.join(QLatin1Char(' '));
}

std::optional<LaunchCommand> expandLauncher(const QString& launcher_template, const QString& agent,
                                            const QStringList& agent_args, int world,
                                            const QString& hostfile, const QString& out_dir,
                                            QString* error) {
  if (launcher_template.trimmed().isEmpty()) return LaunchCommand{agent, agent_args};
  const QStringList tokens = QProcess::splitCommand(launcher_template);
  if (tokens.isEmpty()) {
    if (error) *error = QStringLiteral("the launcher template names no program");
    return std::nullopt;
  }
  if (!launcher_template.contains(QLatin1String("{agent}"))) {
    if (error)
      *error = QStringLiteral("the launcher template must contain {agent} (where the agent goes)");
    return std::nullopt;
  }
  QStringList out;
  for (const QString& token : tokens) {
    if (token == QLatin1String("{args}")) {
      out << agent_args;
      continue;
    }
    QString t = token;
    t.replace(QLatin1String("{world}"), QString::number(world));
    t.replace(QLatin1String("{hostfile}"), hostfile);
    t.replace(QLatin1String("{agent}"), agent);
    t.replace(QLatin1String("{out}"), out_dir);
    out << t;
  }
  LaunchCommand c;
  c.program = out.takeFirst();
  c.arguments = out;
  return c;
}

namespace {
// Where the settings' rules come from, as error messages and the rules' description name it.
const std::string kRulesOrigin = "rules in the settings";

// Whether the text has a rule: a line that is neither blank nor a '#' comment.
bool hasRules(const QString& text) {
  for (const QString& line : text.split(QLatin1Char('\n'))) {
    const QString t = line.trimmed();
    if (!t.isEmpty() && !t.startsWith(QLatin1Char('#'))) return true;
  }
  return false;
}
}  // namespace

namespace settings {
namespace {
// DDPSCOPE_SETTINGS=FILE keeps the settings in that INI file (portable setups, parallel tests).
QSettings store() {
  const QString file = qEnvironmentVariable("DDPSCOPE_SETTINGS");
  if (!file.isEmpty()) return QSettings(file, QSettings::IniFormat);
  return QSettings(QStringLiteral("ddpscope"), QStringLiteral("ddpscope"));
}
}  // namespace

QString defaultAgentPath() {
  const QDir here(QCoreApplication::applicationDirPath());
  for (const QString& candidate : {here.filePath(QStringLiteral("ddpscope-agent")),
                                   here.filePath(QStringLiteral("../../agent/ddpscope-agent"))}) {
    const QFileInfo f(candidate);
    if (f.isFile() && f.isExecutable()) return f.canonicalFilePath();
  }
  const QString found = QStandardPaths::findExecutable(QStringLiteral("ddpscope-agent"));
  return found.isEmpty() ? here.filePath(QStringLiteral("../../agent/ddpscope-agent")) : found;
}

QString agentPath() {
  const QString p = store().value(QStringLiteral("run/agentPath")).toString();
  return p.isEmpty() ? defaultAgentPath() : p;
}
void setAgentPath(const QString& path) {
  store().setValue(QStringLiteral("run/agentPath"), path);
}

QString launcherTemplate() {
  return store().value(QStringLiteral("run/launcherTemplate")).toString();
}
void setLauncherTemplate(const QString& t) {
  store().setValue(QStringLiteral("run/launcherTemplate"), t);
}

QString hostfile() {
  return store().value(QStringLiteral("run/hostfile")).toString();
}
void setHostfile(const QString& path) {
  store().setValue(QStringLiteral("run/hostfile"), path);
}

QString tracesFolder() {
  const QString p = store().value(QStringLiteral("run/tracesFolder")).toString();
  if (!p.isEmpty()) return p;
  return QDir(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation))
      .filePath(QStringLiteral("runs"));
}
void setTracesFolder(const QString& path) {
  store().setValue(QStringLiteral("run/tracesFolder"), path);
}

RunParameters lastRunParameters() {
  QSettings s = store();
  RunParameters p;
  s.beginGroup(QStringLiteral("lastRun"));
  p.backend = s.value(QStringLiteral("backend"), p.backend).toString();
  p.world_size = s.value(QStringLiteral("worldSize"), p.world_size).toInt();
  p.bucket_mb = s.value(QStringLiteral("bucketMb"), p.bucket_mb).toDouble();
  p.first_bucket_mb = s.value(QStringLiteral("firstBucketMb"), p.first_bucket_mb).toDouble();
  p.overlap = s.value(QStringLiteral("overlap"), p.overlap).toBool();
  p.fusion = s.value(QStringLiteral("fusion"), p.fusion).toString();
  p.model = s.value(QStringLiteral("model"), p.model).toString();
  p.layers = s.value(QStringLiteral("layers"), p.layers).toInt();
  p.hidden = s.value(QStringLiteral("hidden"), p.hidden).toInt();
  p.steps = s.value(QStringLiteral("steps"), p.steps).toInt();
  s.endGroup();
  return p;
}

void setLastRunParameters(const RunParameters& p) {
  QSettings s = store();
  s.beginGroup(QStringLiteral("lastRun"));
  s.setValue(QStringLiteral("backend"), p.backend);
  s.setValue(QStringLiteral("worldSize"), p.world_size);
  s.setValue(QStringLiteral("bucketMb"), p.bucket_mb);
  s.setValue(QStringLiteral("firstBucketMb"), p.first_bucket_mb);
  s.setValue(QStringLiteral("overlap"), p.overlap);
  s.setValue(QStringLiteral("fusion"), p.fusion);
  s.setValue(QStringLiteral("model"), p.model);
  s.setValue(QStringLiteral("layers"), p.layers);
  s.setValue(QStringLiteral("hidden"), p.hidden);
  s.setValue(QStringLiteral("steps"), p.steps);
  s.endGroup();
}

QString theme() {
  return store().value(QStringLiteral("ui/theme"), QStringLiteral("system")).toString();
}
void setTheme(const QString& theme) {
  store().setValue(QStringLiteral("ui/theme"), theme);
}
int digestOfferRanks() {
  return std::max(0, store().value(QStringLiteral("ui/digestOfferRanks"), 64).toInt());
}
void setDigestOfferRanks(int ranks) {
  store().setValue(QStringLiteral("ui/digestOfferRanks"), std::max(0, ranks));
}
double digestOfferGB() {
  return std::max(0.0, store().value(QStringLiteral("ui/digestOfferGB"), 8.0).toDouble());
}
void setDigestOfferGB(double gb) {
  store().setValue(QStringLiteral("ui/digestOfferGB"), std::max(0.0, gb));
}
QByteArray centreSplitterState() {
  return store().value(QStringLiteral("centreSplitter")).toByteArray();
}
void setCentreSplitterState(const QByteArray& state) {
  store().setValue(QStringLiteral("centreSplitter"), state);
}
QString userRules() {
  return store().value(QStringLiteral("analysis/rules")).toString();
}
void setUserRules(const QString& text) {
  store().setValue(QStringLiteral("analysis/rules"), text);
}

std::shared_ptr<const analysis::ClassRules> classRules() {
  const QString text = userRules();
  if (!hasRules(text)) return analysis::ClassRules::forCommandLine({});
  return analysis::ClassRules::withUserRules(text.toStdString(), kRulesOrigin);
}
}  // namespace settings

std::shared_ptr<const analysis::ClassRules> parseUserRules(const QString& text, QString* error) {
  try {
    if (!hasRules(text)) return analysis::ClassRules::forCommandLine({});
    return analysis::ClassRules::withUserRules(text.toStdString(), kRulesOrigin);
  } catch (const analysis::RulesError& e) {
    if (error) *error = QString::fromStdString(e.what());
    return nullptr;
  }
}

}  // namespace ddpscope::ui
