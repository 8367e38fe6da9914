#include "app/ui/run_list_panel.h"

#include <QIcon>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QVBoxLayout>

#include "app/ui/palette.h"
#include "app/ui/run_text.h"
#include "app/ui/session.h"

namespace ddpscope::ui {

RunListPanel::RunListPanel(Session* session, QWidget* parent)
    : QWidget(parent), session_(session), list_(new QListWidget(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* title = new QLabel(tr("<b>Runs</b>"), this);
  layout->addWidget(title);
  layout->addWidget(list_, 1);
  list_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(list_, &QListWidget::currentRowChanged, session_,
          [this](int row) { session_->setCurrent(row); });
  connect(list_, &QListWidget::customContextMenuRequested, this, [this](const QPoint& p) {
    const int row = list_->indexAt(p).row();
    if (row < 0) return;
    QMenu menu;
    menu.addAction(tr("Close run"), this, [this, row] { session_->closeRun(row); });
    menu.exec(list_->mapToGlobal(p));
  });
  connect(session_, &Session::runsChanged, this, &RunListPanel::refresh);
  connect(session_, &Session::currentRunChanged, this, &RunListPanel::refresh);
  refresh();
}

void RunListPanel::refresh() {
  QSignalBlocker block(list_);
  list_->clear();
  for (const auto& run : session_->runs()) {
    const QString badge = sourceBadge(run->source());
    auto* item = new QListWidgetItem(
        QStringLiteral("%1\n%2 · %3 events\n%4")
            .arg(run->name, ranksText(*run),
                 QLocale().toString(static_cast<qlonglong>(run->run.eventCount())), badge));
    item->setToolTip(run->paths.join('\n'));
    item->setForeground(QPalette().color(QPalette::Text));
    if (run->incomplete()) {
      item->setText(item->text() + QStringLiteral(" · ") + kIncompleteBadge);
      item->setIcon(warningIcon());
      item->setToolTip(run->incompleteText() + QStringLiteral("\n\n") + item->toolTip());
    }
    list_->addItem(item);
  }
  list_->setCurrentRow(session_->currentIndex());
}

}  // namespace ddpscope::ui
