#include "app/ui/settings_dialog.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFontDatabase>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QtConcurrent>
#include <utility>
#include <vector>

#include "app/ui/app_settings.h"
#include "app/ui/palette.h"
#include "app/ui/session.h"

namespace ddpscope::ui {

namespace {
using RunList = std::vector<std::shared_ptr<const LoadedRun>>;
using Reanalysed =
    std::vector<std::pair<std::shared_ptr<const LoadedRun>, std::shared_ptr<LoadedRun>>>;

// The rules editor: the text, and under it whether the parser accepts it.
struct RulesEditor {
  QPlainTextEdit* text;
  QLabel* status;
};

RulesEditor buildRulesEditor(QDialog* dialog) {
  auto* text = new QPlainTextEdit(settings::userRules(), dialog);
  text->setObjectName(QStringLiteral("rulesEditor"));
  text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text->setLineWrapMode(QPlainTextEdit::NoWrap);
  text->setMinimumSize(560, 120);
  text->setPlaceholderText(QStringLiteral(
      "# One rule a line, before the built-in rules (docs/RULES.md), e.g.\n"
      "{\"match\": \"^fused_gemm_allgather\", \"class\": \"communication\", \"kind\": "
      "\"all_gather\"}"));
  text->setToolTip(QObject::tr(
      "Classification rules in the rules-file format (JSON Lines): one object a line with "
      "\"match\" (a regular expression) and \"class\"; optionally \"kind\", \"category\", "
      "\"stream\" and \"name\". They go before the built-in rules, and apply to the runs open "
      "as soon as you press OK."));
  auto* status = new QLabel(dialog);
  status->setObjectName(QStringLiteral("rulesStatus"));
  status->setWordWrap(true);
  status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return {text, status};
}

// Checks the editor's text with the analysis library's parser; says so under it. True when the
// rules are good.
bool checkRules(const RulesEditor& editor) {
  QString error;
  const auto rules = parseUserRules(editor.text->toPlainText(), &error);
  if (!rules) {
    editor.status->setStyleSheet(
        QStringLiteral("QLabel{color:%1;}").arg(colours::kErrorText.name()));
    editor.status->setText(error);
    return false;
  }
  editor.status->setStyleSheet(QStringLiteral("QLabel{color:%1;}").arg(colours::kLabelGrey.name()));
  editor.status->setText(
      QObject::tr("Classification: %1").arg(QString::fromStdString(rules->description())));
  return true;
}
}  // namespace

void applyRules(Session* session, std::shared_ptr<const analysis::ClassRules> rules) {
  static std::uint64_t latest = 0;  // the newest call: only its results are applied
  const std::uint64_t generation = ++latest;
  RunList runs = session->runs();
  if (runs.empty()) return;
  auto* watcher = new QFutureWatcher<Reanalysed>(session);
  QObject::connect(watcher, &QFutureWatcher<Reanalysed>::finished, session,
                   [session, watcher, generation] {
                     watcher->deleteLater();
                     if (generation != latest) return;
                     for (const auto& [old, fresh] : watcher->result())
                       if (fresh) session->replaceRun(old, fresh);
                   });
  watcher->setFuture(QtConcurrent::run([runs = std::move(runs), rules = std::move(rules)] {
    Reanalysed out;
    for (const auto& run : runs) {
      try {
        out.emplace_back(run, reanalyseRun(*run, rules));
      } catch (const std::exception&) {
        out.emplace_back(run, nullptr);  // left as it was
      }
    }
    return out;
  }));
}

bool editRunSettings(QWidget* parent, Session* session) {
  QDialog dialog(parent);
  dialog.setWindowTitle(QObject::tr("Run settings"));
  auto* form = new QFormLayout(&dialog);
  auto* agent = new QLineEdit(settings::agentPath(), &dialog);
  auto* browse = new QPushButton(QObject::tr("Browse…"), &dialog);
  auto* agent_row = new QHBoxLayout;
  agent_row->addWidget(agent, 1);
  agent_row->addWidget(browse);
  QObject::connect(browse, &QPushButton::clicked, &dialog, [&] {
    const QString f =
        QFileDialog::getOpenFileName(&dialog, QObject::tr("ddpscope-agent"), agent->text());
    if (!f.isEmpty()) agent->setText(f);
  });
  auto* launcher = new QLineEdit(settings::launcherTemplate(), &dialog);
  launcher->setPlaceholderText(
      QStringLiteral("mpirun -np {world} --hostfile {hostfile} {agent} {args}"));
  launcher->setToolTip(QObject::tr(
      "Split into arguments like a shell would, then {args} becomes the agent's arguments and "
      "{world}, {hostfile}, {agent}, {out} are filled in. Nothing is run through a shell."));
  auto* hostfile = new QLineEdit(settings::hostfile(), &dialog);
  auto* traces = new QLineEdit(settings::tracesFolder(), &dialog);
  traces->setToolTip(
      QObject::tr("New runs are written here; for multi-node runs, a path all nodes share"));
  auto* theme = new QComboBox(&dialog);
  theme->addItem(QObject::tr("system"), QStringLiteral("system"));
  theme->addItem(QObject::tr("light"), QStringLiteral("light"));
  theme->addItem(QObject::tr("dark"), QStringLiteral("dark"));
  theme->setCurrentIndex(std::max(0, theme->findData(settings::theme())));
  form->addRow(QObject::tr("agent"), agent_row);
  form->addRow(QObject::tr("launcher template"), launcher);
  form->addRow(QObject::tr("hostfile"), hostfile);
  form->addRow(QObject::tr("traces folder"), traces);
  form->addRow(QObject::tr("theme"), theme);
  // Above these a run is offered as a digest rather than loaded whole (0: never).
  auto* digest_ranks = new QSpinBox(&dialog);
  digest_ranks->setObjectName(QStringLiteral("digestOfferRanks"));
  digest_ranks->setRange(0, 1'000'000);
  digest_ranks->setValue(settings::digestOfferRanks());
  digest_ranks->setSpecialValueText(QObject::tr("never"));
  digest_ranks->setSuffix(QObject::tr(" ranks"));
  auto* digest_gb = new QDoubleSpinBox(&dialog);
  digest_gb->setObjectName(QStringLiteral("digestOfferGB"));
  digest_gb->setRange(0, 1'000'000);
  digest_gb->setDecimals(1);
  digest_gb->setValue(settings::digestOfferGB());
  digest_gb->setSpecialValueText(QObject::tr("never"));
  digest_gb->setSuffix(QObject::tr(" GB"));
  auto* digest_row = new QHBoxLayout;
  digest_row->addWidget(digest_ranks);
  digest_row->addWidget(new QLabel(QObject::tr("or"), &dialog));
  digest_row->addWidget(digest_gb);
  digest_row->addStretch(1);
  form->addRow(QObject::tr("offer the digest above"), digest_row);
  const RulesEditor rules = buildRulesEditor(&dialog);
  form->addRow(QObject::tr("classification rules"), rules.text);
  form->addRow(QString(), rules.status);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  form->addRow(buttons);
  // OK only for rules the parser accepts; the error names the line.
  const auto check = [&] { buttons->button(QDialogButtonBox::Ok)->setEnabled(checkRules(rules)); };
  QObject::connect(rules.text, &QPlainTextEdit::textChanged, &dialog, check);
  check();
  QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  if (dialog.exec() != QDialog::Accepted) return false;
  settings::setAgentPath(agent->text().trimmed() == settings::defaultAgentPath()
                             ? QString()
                             : agent->text().trimmed());
  settings::setLauncherTemplate(launcher->text().trimmed());
  settings::setHostfile(hostfile->text().trimmed());
  settings::setTracesFolder(traces->text().trimmed());
  settings::setTheme(theme->currentData().toString());
  settings::setDigestOfferRanks(digest_ranks->value());
  settings::setDigestOfferGB(digest_gb->value());
  const QString rules_text = rules.text->toPlainText();
  if (rules_text != settings::userRules()) {
    settings::setUserRules(rules_text);
    QString error;
    if (session) {
      if (auto parsed = parseUserRules(rules_text, &error)) applyRules(session, std::move(parsed));
    }
  }
  return true;
}

}  // namespace ddpscope::ui
