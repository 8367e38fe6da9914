#include "app/ui/settings_dialog.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>

#include "app/ui/app_settings.h"

namespace ddpscope::ui {

bool editRunSettings(QWidget* parent) {
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
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  form->addRow(buttons);
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
  return true;
}

}  // namespace ddpscope::ui
